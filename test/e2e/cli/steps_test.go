package cli_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/test/env"
)

// step is one subtest over the shared zone. It starts from the healthy zone
// and leaves it so: whatever it creates it deletes, whatever it moves it moves
// back, so that no step depends on another having run before it.
type step struct {
	name string
	run  func(t *testing.T)
}

// runSteps runs steps as subtests, each once the zone is healthy. The order is
// the one given, or under go test -shuffle one shuffled by the seed -shuffle
// names (a seed of its own for -shuffle=on, logged so that -shuffle=<seed>
// repeats it): go test shuffles top-level tests only.
func (z *zone) runSteps(t *testing.T, steps []step) {
	t.Helper()
	if f := flag.Lookup("test.shuffle"); f != nil && f.Value.String() != "off" {
		seed, err := strconv.ParseInt(f.Value.String(), 10, 64)
		if err != nil {
			seed = time.Now().UnixNano()
		}
		r := rand.New(rand.NewPCG(uint64(seed), 0)) //nolint:gosec // an order of tests, not a secret
		r.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		names := make([]string, len(steps))
		for i, s := range steps {
			names[i] = s.name
		}
		t.Logf("steps of %s shuffled by seed %d: %q", t.Name(), seed, names)
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			z.healthy(t)
			s.run(t)
		})
	}
}

// healthy waits until the zone is as a step expects to find it: both
// workload clusters reachable, no FailoverRequest unfinished, the group
// running on the primary, and its replication healthy and ready to fail over.
func (z *zone) healthy(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	q := z.Client(env.Quorum)
	env.Eventually(t, timeout, "the healthy zone", func() error {
		pz := &srv1alpha1.ProtectionZone{}
		if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: env.ZoneName}, pz); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(pz.Status.Conditions, srv1alpha1.ConditionReady) {
			return fmt.Errorf("zone not ready: %+v", pz.Status.Conditions)
		}
		frs := &srv1alpha1.FailoverRequestList{}
		if err := q.List(ctx, frs, client.InNamespace(env.Namespace)); err != nil {
			return err
		}
		for _, fr := range frs.Items {
			if fr.Status.Phase != srv1alpha1.FailoverCompleted && fr.Status.Phase != srv1alpha1.FailoverFailed {
				return fmt.Errorf("FailoverRequest %s unfinished (%s)", fr.Name, fr.Status.Phase)
			}
		}
		pg := &srv1alpha1.ProtectionGroup{}
		if err := z.Client(env.Primary).Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, pg); err != nil {
			return err
		}
		if pg.Status.CurrentState != srv1alpha1.StateRunning {
			return fmt.Errorf("group %s on %s: currentState %q", group, env.Primary, pg.Status.CurrentState)
		}
		rgs := &srv1alpha1.ReplicationGroupStatus{}
		if err := q.Get(ctx, client.ObjectKey{Namespace: env.Namespace, Name: group}, rgs); err != nil {
			return err
		}
		if rgs.Status.Health != srv1alpha1.HealthHealthy || !rgs.Status.FailoverReady {
			return fmt.Errorf("replication health %s, failoverReady %v", rgs.Status.Health, rgs.Status.FailoverReady)
		}
		return nil
	})
}

// created are the names of the objects of list in the DR namespace that are
// not in before: what a step's command created.
func (z *zone) created(t *testing.T, list client.ObjectList, before map[string]bool) []string {
	t.Helper()
	var out []string
	for name := range z.names(t, list) {
		if !before[name] {
			out = append(out, name)
		}
	}
	return out
}

// names are the names of the objects of list in the DR namespace.
func (z *zone) names(t *testing.T, list client.ObjectList) map[string]bool {
	t.Helper()
	c := z.Client(env.Quorum)
	if err := c.List(context.Background(), list, client.InNamespace(env.Namespace)); err != nil {
		t.Fatalf("list: %v", err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		t.Fatalf("items of %T: %v", list, err)
	}
	out := map[string]bool{}
	for _, item := range items {
		out[item.(client.Object).GetName()] = true
	}
	return out
}
