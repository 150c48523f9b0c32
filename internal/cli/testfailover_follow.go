package cli

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// followTestFailover streams tf's phases until it ends (or timeout passes;
// the test goes on) and prints its check results: the --wait of
// test-failover and of drill, which differ only in what they call it (what).
func (o *Options) followTestFailover(ctx context.Context, c client.Client, tf *srv1alpha1.TestFailover, what string, timeout time.Duration, wf *writeFlags) error {
	p := &progress{w: o.stream(wf.print)}
	err := poll(ctx, timeout, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(tf), tf); err != nil {
			return false, err
		}
		p.update(tf.Status.PhaseHistory, "")
		return testFailoverDone(tf.Status.Phase), nil
	})
	if err != nil {
		return stillRunning(err, what, tf.Namespace, tf.Name, string(tf.Status.Phase))
	}
	if wf.print.human() {
		return checkTable(o.Out, tf)
	}
	return wf.print.printObj(tf, o.Out)
}
