package harness

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// readCRDs parses the CRD files once per zone; every cluster gets its own copy.
func readCRDs(paths []string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	if paths == nil {
		paths = DefaultCRDPaths()
	}
	if len(paths) == 0 {
		return nil, nil
	}
	opts := envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}
	if err := envtest.ReadCRDFiles(&opts); err != nil {
		return nil, fmt.Errorf("reading CRDs from %v: %w", paths, err)
	}
	return opts.CRDs, nil
}

func copyCRDs(in []*apiextensionsv1.CustomResourceDefinition) []*apiextensionsv1.CustomResourceDefinition {
	out := make([]*apiextensionsv1.CustomResourceDefinition, len(in))
	for i, crd := range in {
		out[i] = crd.DeepCopy()
	}
	return out
}

// installCRDs creates the CRDs concurrently (envtest creates them one by one), waits
// until discovery serves all of them, as envtest does, and installs the admission
// policies that come with them (installPolicies).
func installCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return nil
	}
	scheme := runtime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, crd := range crds {
		wg.Go(func() {
			if err := cl.Create(ctx, crd); err != nil {
				errs[i] = fmt.Errorf("create CRD %s: %w", crd.Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := waitCRDsServed(ctx, cfg, crds); err != nil {
		return err
	}
	return installPolicies(ctx, cfg, crds)
}

// waitTemplateCRDs waits until a cluster started from an etcd template serves
// the CRDs the template holds and enforces their admission policies: both are
// loaded through informers after /readyz.
func waitTemplateCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if len(crds) == 0 {
		return nil
	}
	if err := waitCRDsServed(ctx, cfg, crds); err != nil {
		return err
	}
	if !hasPolicies(crds) {
		return nil
	}
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		return fmt.Errorf("admission policies: %w", err)
	}
	return waitEnforced(ctx, cl)
}

// waitCRDsServed waits until discovery serves every CRD, as envtest does.
func waitCRDsServed(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	maxTime := processStartTimeout
	if deadline, ok := ctx.Deadline(); ok {
		maxTime = time.Until(deadline)
	}
	opts := envtest.CRDInstallOptions{PollInterval: 50 * time.Millisecond, MaxTime: maxTime}
	if err := envtest.WaitForCRDs(cfg, crds, opts); err != nil {
		return fmt.Errorf("waiting for CRDs to be served: %w", err)
	}
	return nil
}
