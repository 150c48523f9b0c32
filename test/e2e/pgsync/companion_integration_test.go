package pgsync_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/quorum/pgsync"
	"github.com/siterecovery/siterecovery/internal/quorum/setup"
	"github.com/siterecovery/siterecovery/test/env"
)

// secretValue is the companion Secret's password: it must reach the DR
// copy and nothing else.
const secretValue = "s3cr3t-companion-value"

func companionKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: env.AppNS, Name: name}
}

// companionState finds a companion's entry in the quorum copy's status.
func companionState(g *srv1alpha1.ProtectionGroup, kind srv1alpha1.CompanionKind, name, cluster string) *srv1alpha1.CompanionStatus {
	for i, st := range g.Status.Companions {
		if st.Kind == kind && st.Name == name && st.Cluster == cluster {
			return &g.Status.Companions[i]
		}
	}
	return nil
}

// companionStates waits until the quorum copy reports each companion, keyed
// "kind/name/cluster", in the given state.
func companionStates(t *testing.T, q client.Client, what string, want map[string]srv1alpha1.CompanionState) {
	t.Helper()
	env.Eventually(t, wait, what, func() error {
		g := &srv1alpha1.ProtectionGroup{}
		if err := q.Get(context.Background(), groupKey, g); err != nil {
			return err
		}
		for key, state := range want {
			parts := strings.SplitN(key, "/", 3)
			st := companionState(g, srv1alpha1.CompanionKind(parts[0]), parts[1], parts[2])
			if st == nil || st.State != state {
				return fmt.Errorf("%s: %+v, want %s (all: %+v)", key, st, state, g.Status.Companions)
			}
		}
		return nil
	})
}

// TestPGSyncCompanions checks the copies of a group's companion objects on
// the DR cluster (with SITERECOVERY_MINTED_KUBECONFIGS=1, as the workload
// chart's quorum identity with quorumAccess.companionSecrets, under its RBAC
// and admission guard): a ConfigMap, a Service, a KubeVirt instancetype (by
// name) and preference (by selector) copied and updated, an override applied
// on the DR copy only, a Secret copied only once the group asks and its value
// in no status or event, an unlabelled object of a companion's name (a
// ConfigMap, an instancetype) left alone and reported, and a companion
// removed from the list or deleted at the source deleted on the DR cluster
// only where pg-sync created it; after a failover the copies stay in place
// and the originals on the former primary are reported and left alone; the
// Secret's value is in no log line of quorum-manager's (debug level).
func TestPGSyncCompanions(t *testing.T) {
	logs := &lockedBuffer{}
	log.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(io.MultiWriter(t.Output(), logs))))
	t.Cleanup(func() {
		require.NotContains(t, logs.String(), secretValue, "no log line carries the Secret's value")
		require.NotContains(t, logs.String(), "czNjcjN0", "nor its base64")
	})
	e := env.New(t, env.Options{CompanionSecrets: true, Instancetypes: true})
	e.StartQuorum(t, setup.QuorumOptions{ProbeInterval: 200 * time.Millisecond})
	e.StartWorkload(t, env.Primary, env.WorkloadOptions{})
	e.StartWorkload(t, env.DR, env.WorkloadOptions{})
	ctx := context.Background()
	q, primary, dr := e.Client(env.Quorum), e.Client(env.Primary), e.Client(env.DR)

	require.NoError(t, primary.Create(ctx, newVM("db", false)))
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db-config"},
		Data: map[string]string{"DB_HOST": "db.primary.example", "POOL": "10"}}
	require.NoError(t, primary.Create(ctx, config))
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db", Annotations: map[string]string{"example.com/team": "data"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "db"},
			Ports: []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}}}}
	require.NoError(t, primary.Create(ctx, svc))
	require.NotEmpty(t, svc.Spec.ClusterIP)
	require.NotZero(t, svc.Spec.Ports[0].NodePort)
	require.NoError(t, primary.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db-password",
		Labels: map[string]string{"app": "db"}}, StringData: map[string]string{"password": secretValue}}))
	// "legacy" exists on both sides; the DR one was made by hand, not by pg-sync.
	for _, c := range []client.Client{primary, dr} {
		require.NoError(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "legacy"},
			Data: map[string]string{"site": "hand-made"}}))
	}
	legacy := &corev1.ConfigMap{}
	require.NoError(t, dr.Get(ctx, companionKey("legacy"), legacy))
	// KubeVirt's namespaced instancetype and preference; "legacy-size"
	// exists on both sides, the DR one made by hand.
	it, pref := srv1alpha1.CompanionInstancetype, srv1alpha1.CompanionPreference
	require.NoError(t, primary.Create(ctx, kubevirtCompanion(it, "db-size", nil, instancetypeSpec("2Gi"))))
	require.NoError(t, primary.Create(ctx, kubevirtCompanion(pref, "db-pref", map[string]string{"app": "db"},
		map[string]any{"preferredTerminationGracePeriodSeconds": int64(30)})))
	for _, c := range []client.Client{primary, dr} {
		require.NoError(t, c.Create(ctx, kubevirtCompanion(it, "legacy-size", nil, instancetypeSpec("1Gi"))))
	}
	legacySize, err := getKubevirtCompanion(ctx, dr, it, "legacy-size")
	require.NoError(t, err)

	overrideCM, err := json.Marshal(map[string]any{"data": map[string]any{"DB_HOST": "db.dr.example"}})
	require.NoError(t, err)
	overrideSvc, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/site": "dr"}}})
	require.NoError(t, err)
	require.NoError(t, q.Create(ctx, &srv1alpha1.ProtectionGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.Namespace, Name: groupName},
		Spec: srv1alpha1.ProtectionGroupSpec{
			ZoneRef:         &srv1alpha1.LocalObjectReference{Name: env.ZoneName},
			ActiveCluster:   env.Primary,
			VirtualMachines: refs("db"),
			Companions: &srv1alpha1.CompanionObjects{
				Objects: []srv1alpha1.CompanionSelector{
					{Kind: srv1alpha1.CompanionConfigMap, Namespace: env.AppNS, Name: "db-config"},
					{Kind: srv1alpha1.CompanionConfigMap, Namespace: env.AppNS, Name: "legacy"},
					{Kind: srv1alpha1.CompanionService, Namespace: env.AppNS, Name: "db"},
					{Kind: srv1alpha1.CompanionSecret, Namespace: env.AppNS, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
					{Kind: it, Namespace: env.AppNS, Name: "db-size"},
					{Kind: it, Namespace: env.AppNS, Name: "legacy-size"},
					{Kind: pref, Namespace: env.AppNS, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}},
				},
				Overrides: []srv1alpha1.CompanionOverride{
					{Kind: srv1alpha1.CompanionConfigMap, Namespace: env.AppNS, Name: "db-config", Cluster: env.DR, MergePatch: runtime.RawExtension{Raw: overrideCM}},
					{Kind: srv1alpha1.CompanionService, Namespace: env.AppNS, Name: "db", Cluster: env.DR, MergePatch: runtime.RawExtension{Raw: overrideSvc}},
				},
			},
		},
	}))

	// The ConfigMap and Service are copied, with the DR override, labelled
	// as pg-sync's; the Secret is refused until the group asks; the
	// hand-made "legacy" and "legacy-size" are conflicts.
	companionStates(t, q, "first copies", map[string]srv1alpha1.CompanionState{
		"ConfigMap/db-config/" + env.DR:                    srv1alpha1.CompanionInSync,
		"Service/db/" + env.DR:                             srv1alpha1.CompanionInSync,
		"ConfigMap/legacy/" + env.DR:                       srv1alpha1.CompanionConflict,
		"Secret//":                                         srv1alpha1.CompanionRefused,
		"VirtualMachineInstancetype/db-size/" + env.DR:     srv1alpha1.CompanionInSync,
		"VirtualMachinePreference/db-pref/" + env.DR:       srv1alpha1.CompanionInSync,
		"VirtualMachineInstancetype/legacy-size/" + env.DR: srv1alpha1.CompanionConflict,
	})
	requireKubevirtCopy(t, dr, it, "db-size", "2Gi", "spec", "memory", "guest")
	requireKubevirtCopy(t, dr, pref, "db-pref", int64(30), "spec", "preferredTerminationGracePeriodSeconds")
	cm := &corev1.ConfigMap{}
	require.NoError(t, dr.Get(ctx, companionKey("db-config"), cm))
	require.Equal(t, map[string]string{"DB_HOST": "db.dr.example", "POOL": "10"}, cm.Data, "the override applies on the DR copy")
	require.Equal(t, pgsync.ControllerName, cm.Labels[pgsync.CreatedByLabel])
	require.Equal(t, env.Namespace, cm.Labels[srv1alpha1.DRNamespaceLabel])
	require.Equal(t, groupName, cm.Labels[srv1alpha1.ProtectionGroupLabel])
	copySvc := &corev1.Service{}
	require.NoError(t, dr.Get(ctx, companionKey("db"), copySvc))
	require.Equal(t, corev1.ServiceTypeNodePort, copySvc.Spec.Type)
	require.Equal(t, "dr", copySvc.Annotations["example.com/site"])
	require.Equal(t, "data", copySvc.Annotations["example.com/team"])
	require.Equal(t, map[string]string{"app": "db"}, copySvc.Spec.Selector)
	require.NotEmpty(t, copySvc.Spec.ClusterIP, "the DR cluster allocated its own cluster IP")
	require.NotZero(t, copySvc.Spec.Ports[0].NodePort, "the DR cluster allocated its own node port")
	src := &corev1.ConfigMap{}
	require.NoError(t, primary.Get(ctx, companionKey("db-config"), src))
	require.Equal(t, "db.primary.example", src.Data["DB_HOST"], "the source is not changed")
	require.Empty(t, src.Labels[pgsync.CreatedByLabel])
	require.True(t, apierrors.IsNotFound(dr.Get(ctx, companionKey("db-password"), &corev1.Secret{})), "no Secret copied without copySecrets")
	now := &corev1.ConfigMap{}
	require.NoError(t, dr.Get(ctx, companionKey("legacy"), now))
	require.Equal(t, legacy.ResourceVersion, now.ResourceVersion, "the hand-made object is left as it is")

	// A change at the source reaches the copy on the next pass, the
	// override still on top.
	patch(t, primary, companionKey("db-config"), &corev1.ConfigMap{}, func(c *corev1.ConfigMap) { c.Data["POOL"] = "20" })
	size, err := getKubevirtCompanion(ctx, primary, it, "db-size")
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(size.Object, "4Gi", "spec", "memory", "guest"))
	require.NoError(t, primary.Update(ctx, size))
	setRPO(t, e, 90)
	env.Eventually(t, wait, "instancetype change copied", kubevirtCopyHas(dr, it, "db-size", "4Gi", "spec", "memory", "guest"))
	env.Eventually(t, wait, "source change copied", func() error {
		c := &corev1.ConfigMap{}
		if err := dr.Get(ctx, companionKey("db-config"), c); err != nil {
			return err
		}
		if c.Data["POOL"] != "20" || c.Data["DB_HOST"] != "db.dr.example" {
			return fmt.Errorf("data %v", c.Data)
		}
		return nil
	})

	// The group asks for its Secrets: the copy carries the value, the status
	// and the group's events do not.
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.Companions.CopySecrets = true })
	companionStates(t, q, "secret copied", map[string]srv1alpha1.CompanionState{"Secret/db-password/" + env.DR: srv1alpha1.CompanionInSync})
	sec := &corev1.Secret{}
	require.NoError(t, dr.Get(ctx, companionKey("db-password"), sec))
	require.Equal(t, secretValue, string(sec.Data["password"]))
	g := &srv1alpha1.ProtectionGroup{}
	require.NoError(t, q.Get(ctx, groupKey, g))
	status, err := json.Marshal(g.Status)
	require.NoError(t, err)
	require.NotContains(t, string(status), secretValue)
	require.NotContains(t, string(status), "czNjcjN0", "nor its base64")
	events := &corev1.EventList{}
	require.NoError(t, q.List(ctx, events, client.InNamespace(env.Namespace)))
	for _, ev := range events.Items {
		require.NotContains(t, ev.Message, secretValue)
	}

	// A failover flips the active cluster: the copies are in place on the
	// new active cluster and stay there, and the originals on the former
	// primary, which pg-sync did not create, are reported and left as they
	// are. Failing back makes them the sources again.
	rvs := map[string]string{}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Service{}, &corev1.Secret{}} {
		name := map[string]string{"*v1.Service": "db", "*v1.ConfigMap": "db-config", "*v1.Secret": "db-password"}[fmt.Sprintf("%T", obj)]
		require.NoError(t, primary.Get(ctx, companionKey(name), obj))
		rvs[name] = obj.GetResourceVersion()
	}
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.ActiveCluster = env.DR })
	companionStates(t, q, "after the failover: the originals on the former primary", map[string]srv1alpha1.CompanionState{
		"ConfigMap/db-config/" + env.Primary:                srv1alpha1.CompanionConflict,
		"Service/db/" + env.Primary:                         srv1alpha1.CompanionConflict,
		"Secret/db-password/" + env.Primary:                 srv1alpha1.CompanionConflict,
		"VirtualMachineInstancetype/db-size/" + env.Primary: srv1alpha1.CompanionConflict,
		"VirtualMachinePreference/db-pref/" + env.Primary:   srv1alpha1.CompanionConflict,
	})
	require.NoError(t, dr.Get(ctx, companionKey("db-config"), cm))
	require.Equal(t, "db.dr.example", cm.Data["DB_HOST"], "the copy is in place on the new active cluster")
	require.NoError(t, dr.Get(ctx, companionKey("db-password"), sec))
	require.NoError(t, dr.Get(ctx, companionKey("db"), copySvc))
	for name, rv := range rvs {
		obj := map[string]client.Object{"db": &corev1.Service{}, "db-config": &corev1.ConfigMap{}, "db-password": &corev1.Secret{}}[name]
		require.NoError(t, primary.Get(ctx, companionKey(name), obj))
		require.Equal(t, rv, obj.GetResourceVersion(), "the original %s on the former primary is left as it is", name)
	}
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) { g.Spec.ActiveCluster = env.Primary })
	companionStates(t, q, "after the failback", map[string]srv1alpha1.CompanionState{
		"ConfigMap/db-config/" + env.DR: srv1alpha1.CompanionInSync, "Secret/db-password/" + env.DR: srv1alpha1.CompanionInSync,
		"VirtualMachineInstancetype/db-size/" + env.DR: srv1alpha1.CompanionInSync,
	})

	// Removed from the list: the Service, instancetype and preference
	// pg-sync created go, the hand-made "legacy" and "legacy-size" stay. Deleted at the source: the ConfigMap's copy goes.
	patch(t, q, groupKey, &srv1alpha1.ProtectionGroup{}, func(g *srv1alpha1.ProtectionGroup) {
		g.Spec.Companions.Objects = g.Spec.Companions.Objects[:2]
	})
	require.NoError(t, primary.Delete(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: env.AppNS, Name: "db-config"}}))
	setRPO(t, e, 120)
	for _, obj := range []client.Object{&corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{}} {
		name := map[string]string{"*v1.Service": "db", "*v1.ConfigMap": "db-config", "*v1.Secret": "db-password"}[fmt.Sprintf("%T", obj)]
		env.Eventually(t, wait, fmt.Sprintf("%T %s copy deleted", obj, name), func() error {
			if err := dr.Get(ctx, companionKey(name), obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%w)", err)
			}
			return nil
		})
	}
	companionStates(t, q, "missing at the source", map[string]srv1alpha1.CompanionState{
		"ConfigMap/db-config/":       srv1alpha1.CompanionMissingAtSource,
		"ConfigMap/legacy/" + env.DR: srv1alpha1.CompanionConflict,
	})
	require.NoError(t, dr.Get(ctx, companionKey("legacy"), now))
	require.Equal(t, legacy.ResourceVersion, now.ResourceVersion, "the hand-made object is never deleted")
	for _, kn := range []struct {
		kind srv1alpha1.CompanionKind
		name string
	}{{it, "db-size"}, {pref, "db-pref"}} {
		env.Eventually(t, wait, fmt.Sprintf("%s %s copy deleted", kn.kind, kn.name), func() error {
			if _, err := getKubevirtCompanion(ctx, dr, kn.kind, kn.name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%w)", err)
			}
			return nil
		})
	}
	nowSize, err := getKubevirtCompanion(ctx, dr, it, "legacy-size")
	require.NoError(t, err, "the hand-made instancetype is never deleted")
	require.Equal(t, legacySize.GetResourceVersion(), nowSize.GetResourceVersion(), "nor changed")
	_, err = getKubevirtCompanion(ctx, primary, it, "db-size")
	require.NoError(t, err, "the source instancetype stays")
	require.NoError(t, primary.Get(ctx, companionKey("db"), &corev1.Service{}), "the source Service stays")
}

// lockedBuffer collects log lines written from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
