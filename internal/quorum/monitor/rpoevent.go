package monitor

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
	"github.com/siterecovery/siterecovery/internal/flow"
)

// applyEpisode writes an episode transition to its RPOEvent. It runs before the
// status write and is idempotent, so a crash between the two repeats it safely:
// the event's name is derived from the breach's start.
func (r *Reconciler) applyEpisode(ctx context.Context, group *srv1alpha1.ProtectionGroup, ep *Episode) error {
	if ep == nil {
		return nil
	}
	ev := &srv1alpha1.RPOEvent{}
	key := client.ObjectKey{Namespace: group.Namespace, Name: ep.Name}
	if ep.Action == EpisodeStart {
		created, err := r.createEvent(ctx, group, ep)
		if err != nil {
			return err
		}
		if created != nil {
			r.Metrics.breachStarted(group.Name)
			log.FromContext(ctx).Info("RPO objective breached", "rpoEvent", ep.Name, "lagSeconds", ep.Status.PeakLagSeconds,
				"objectiveSeconds", ep.Spec.RPOObjectiveSeconds)
			ev = created
		} else if err := r.Client.Get(ctx, key, ev); err != nil {
			return err
		}
	} else if err := r.Client.Get(ctx, key, ev); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ev.Status.State == srv1alpha1.RPOEventResolved && ep.Action != EpisodeStart {
		return nil // already resolved: keep its end
	}
	if ep.Action == EpisodeStart && ev.Status.State == srv1alpha1.RPOEventActive {
		ep.Status = mergeStatus(ev.Status, ep.Status)
	}
	ev.Status = ep.Status
	if err := flow.WriteStatus(ctx, r.Client, nil, ev, true, nil); err != nil {
		return err
	}
	if ep.Action == EpisodeEnd {
		log.FromContext(ctx).Info("RPO objective met again", "rpoEvent", ep.Name, "peakLagSeconds", ep.Status.PeakLagSeconds)
	}
	return nil
}

// createEvent creates the episode's RPOEvent, owned by the group; it returns nil
// when it exists already.
func (r *Reconciler) createEvent(ctx context.Context, group *srv1alpha1.ProtectionGroup, ep *Episode) (*srv1alpha1.RPOEvent, error) {
	ev := &srv1alpha1.RPOEvent{
		ObjectMeta: metav1.ObjectMeta{Namespace: group.Namespace, Name: ep.Name,
			Labels: map[string]string{srv1alpha1.ProtectionGroupLabel: group.Name}},
		Spec: ep.Spec,
	}
	if err := ctrl.SetControllerReference(group, ev, r.Client.Scheme()); err != nil {
		return nil, err
	}
	if err := r.Client.Create(ctx, ev); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, err
	}
	return ev, nil
}
