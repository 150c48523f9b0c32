package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/console/server"
)

type lagHistory struct {
	Source           string
	ObjectiveSeconds int32
	Samples          []struct {
		At      time.Time
		Seconds int64
	}
	Note string
}

// setLag writes the group's replication status as the monitor would, with
// the lag computed at at.
func (q *quorum) setLag(rgs *srv1alpha1.ReplicationGroupStatus, lag int64, at time.Time) {
	q.t.Helper()
	rgs.Status.MaxLagSeconds = lag
	rgs.Status.LastUpdateTime = &metav1.Time{Time: at}
	require.NoError(q.t, q.admin.Status().Update(context.Background(), rgs))
}

// TestLagHistory follows a group's lag as the group page charts it: without
// Prometheus, the samples the console took each time the group was read;
// with Prometheus, a range query for the group's gauge in its namespace. A
// user who may not read the group's ReplicationGroupStatus gets neither.
func TestLagHistory(t *testing.T) {
	var asked atomic.Value
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer prom-token" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		asked.Store(r.URL.Query().Get("query"))
		start := r.URL.Query().Get("start")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[%s,"0"],[%s.5,"42"],[%s,"NaN"]]}]}}`, start, start, start)
	}))
	t.Cleanup(prom.Close)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("prom-token\n"), 0o600))

	q := startQuorum(t, server.Options{LoginAttempts: 1000})
	rgs := &srv1alpha1.ReplicationGroupStatus{
		ObjectMeta: metav1.ObjectMeta{Namespace: drNamespace, Name: groupName},
		Spec: srv1alpha1.ReplicationGroupStatusSpec{ProtectionGroupRef: srv1alpha1.ProtectionGroupReference{Name: groupName},
			RPOObjectiveSeconds: 60},
	}
	q.create(rgs)
	path := "/api/namespaces/" + drNamespace + "/groups/" + groupName + "/lag?hours=2"

	t.Run("without Prometheus the console charts what it read", func(t *testing.T) {
		b := q.browser()
		require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
		start := time.Now().Add(-time.Minute).Truncate(time.Second)
		for i, lag := range []int64{0, 30, 90, 0} {
			q.setLag(rgs, lag, start.Add(time.Duration(i)*10*time.Second))
			require.Equal(t, http.StatusOK, b.get("/api/overview").code)
		}
		b.get("/api/overview") // the same status again adds no sample
		var h lagHistory
		r := b.get(path)
		require.Equal(t, http.StatusOK, r.code, string(r.body))
		r.json(t, &h)
		assert.Equal(t, "console", h.Source)
		assert.Equal(t, int32(60), h.ObjectiveSeconds)
		var got []int64
		for _, s := range h.Samples {
			got = append(got, s.Seconds)
		}
		assert.Equal(t, []int64{0, 30, 90, 0}, got)
		assert.Contains(t, h.Note, "console.prometheus.url")
	})

	t.Run("a user who may not read the status gets no history", func(t *testing.T) {
		b := q.browser()
		require.Equal(t, http.StatusOK, b.login(q.tokens["stranger"]).code)
		assert.Equal(t, http.StatusForbidden, b.get(path).code)
		assert.Equal(t, http.StatusUnauthorized, q.browser().get(path).code)
	})

	t.Run("hours out of range is a clear error", func(t *testing.T) {
		b := q.browser()
		require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
		r := b.get("/api/namespaces/" + drNamespace + "/groups/" + groupName + "/lag?hours=100")
		assert.Equal(t, http.StatusBadRequest, r.code)
		assert.Contains(t, string(r.body), "hours must be a whole number from 1 to 24")
	})

	t.Run("with Prometheus the history is its range query", func(t *testing.T) {
		qp := startQuorumBeside(t, q, server.Options{LoginAttempts: 1000,
			Prometheus: &server.PrometheusOptions{URL: prom.URL, BearerTokenFile: tokenFile}})
		b := qp.browser()
		require.Equal(t, http.StatusOK, b.login(q.tokens["viewer"]).code)
		var h lagHistory
		r := b.get(path)
		require.Equal(t, http.StatusOK, r.code, string(r.body))
		r.json(t, &h)
		assert.Equal(t, "prometheus", h.Source)
		assert.Equal(t, `max(siterecovery_replication_group_lag_seconds{namespace="dr-production",protection_group="production-pg"})`, asked.Load())
		require.Len(t, h.Samples, 2, "the NaN step is no sample")
		assert.Equal(t, int64(42), h.Samples[1].Seconds)
		assert.NotContains(t, b.seen.String(), "prom-token")
		assert.NotContains(t, qp.log.String(), "prom-token")
	})
}
