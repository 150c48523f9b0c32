package admission_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/boot"
	"github.com/siterecovery/siterecovery/internal/quorum/admission"
	"github.com/siterecovery/siterecovery/internal/quorum/remote"
	"github.com/siterecovery/siterecovery/internal/quorum/zone"
	"github.com/siterecovery/siterecovery/test/env"
)

const group = "web"

// startWebhooks runs quorum-manager's webhooks and the zone controller (which
// connects the workload clusters the ProtectionRequest checks read), and no
// other controller: the tests set request statuses themselves.
func startWebhooks(t *testing.T, e *env.Env, o boot.WebhookOptions) *env.Process {
	return e.Manager(t, env.Quorum, "quorum-webhooks", ctrl.Options{Cache: boot.CacheOptions(env.Namespace), WebhookServer: o.Server()},
		func(mgr ctrl.Manager) error {
			rm := remote.NewManager(mgr.GetScheme(), mgr.GetLogger().WithName("remote"), remote.Options{})
			if err := mgr.Add(rm); err != nil {
				return err
			}
			if err := mgr.Add(&remote.Prober{Manager: rm, Interval: time.Second}); err != nil {
				return err
			}
			if err := zone.SetupWithManager(mgr, rm); err != nil {
				return err
			}
			return boot.ServeWebhooks(mgr, o, func(mgr ctrl.Manager) error { return admission.SetupWithManager(mgr, rm) })
		})
}

// warnings collects the admission warnings a client receives.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// user is a client of the quorum cluster acting as a named user, with the
// admission warnings it gets.
type user struct {
	client.Client
	warnings *warnings
}

func asUser(t *testing.T, e *env.Env, name string) user {
	cfg := rest.CopyConfig(e.Clusters[env.Quorum].Config)
	w := &warnings{}
	cfg.WarningHandler = w
	if name != "" {
		cfg.Impersonate = rest.ImpersonationConfig{UserName: name, Groups: []string{"system:authenticated"}}
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	require.NoError(t, err)
	return user{Client: c, warnings: w}
}

// bind gives a user one of the protectionzone chart's roles in the DR namespace.
func bind(t *testing.T, e *env.Env, userName, clusterRole string) {
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: userName + "-" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: userName}},
	}
	require.NoError(t, e.Client(env.Quorum).Create(context.Background(), rb))
}

func failoverRequest(name, target string, typ srv1alpha1.FailoverType) *srv1alpha1.FailoverRequest {
	return &srv1alpha1.FailoverRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: name},
		Spec: srv1alpha1.FailoverRequestSpec{
			ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: group, Namespace: env.Namespace},
			TargetCluster:      target, FailoverType: typ, DrainTimeoutSeconds: 60, BatchBootTimeoutSeconds: 60,
		},
	}
}

// denied asserts err is the webhook's refusal and that it says want.
func denied(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err, "the webhook should refuse")
	require.Contains(t, err.Error(), "denied the request", "refused by the webhook, not by the schema")
	require.Contains(t, err.Error(), want)
}

// refusedByPolicy asserts err is the refusal of the protectionzone chart's
// ValidatingAdmissionPolicy and that it says want.
func refusedByPolicy(t *testing.T, err error, want string) {
	t.Helper()
	require.Error(t, err, "the admission policy should refuse")
	require.Contains(t, err.Error(), "ValidatingAdmissionPolicy 'siterecovery-confirm-disaster-failover'")
	require.Contains(t, err.Error(), want)
}

func anyContains(list []string, s string) bool {
	for _, x := range list {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}

var resourceGi = resource.MustParse("1Gi")

func contains(s, sub string) bool { return strings.Contains(s, sub) }
