// Package scheme builds the runtime.Scheme every siterecovery binary and test uses:
// the Kubernetes built-ins, both siterecovery API groups, and the third-party types
// the controllers read and write through controller-runtime clients (KubeVirt,
// csi-addons replication, VolSync, CSI snapshots).
package scheme

import (
	volsyncv1alpha1 "github.com/backube/volsync/api/v1alpha1"
	replicationv1alpha1 "github.com/csi-addons/kubernetes-csi-addons/api/replication.storage/v1alpha1"
	groupsnapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	kubevirtv1 "kubevirt.io/api/core/v1"

	drv1alpha1 "github.com/siterecovery/siterecovery/apis/dr/v1alpha1"
	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// New returns a scheme with every type siterecovery talks about.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme,
		apiextensionsv1.AddToScheme,
		srv1alpha1.AddToScheme,
		drv1alpha1.AddToScheme,
		kubevirtv1.AddToScheme,
		replicationv1alpha1.AddToScheme,
		volsyncv1alpha1.AddToScheme,
		snapshotv1.AddToScheme,
		groupsnapshotv1.AddToScheme,
	} {
		utilruntime.Must(add(s))
	}
	return s
}
