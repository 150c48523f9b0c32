package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	srv1alpha1 "github.com/siterecovery/siterecovery/apis/siterecovery/v1alpha1"
)

// PollInterval is how often Wait reads the source replicas.
const PollInterval = 100 * time.Millisecond

// Replica is one source replica and the node of its DR peer.
type Replica struct {
	// Key names the source's DRBDResource.
	Key types.NamespacedName
	// PeerNode is the DR replica's node (its spec.nodeName).
	PeerNode string
	// Protocol is the replica's DRBD protocol.
	Protocol srv1alpha1.ReplicationProtocol
}

// Lacking says what the DR peer of res (a source replica) may still lack of
// the writes the source completed, or "" when it holds them all. A protocol
// A replica's figures count only when res answers token (a fresh reading).
func Lacking(res *srv1alpha1.DRBDResource, peerNode string, protocol srv1alpha1.ReplicationProtocol, token string) string {
	var peer *srv1alpha1.DRBDPeerStatus
	for i := range res.Status.Peers {
		if res.Status.Peers[i].NodeName == peerNode {
			peer = &res.Status.Peers[i]
		}
	}
	switch {
	case peer == nil:
		return fmt.Sprintf("no connection to %s reported", peerNode)
	case peer.ConnectionState != "Connected":
		return fmt.Sprintf("%s towards %s", or(peer.ConnectionState, "no connection state"), peerNode)
	case protocol != srv1alpha1.ProtocolC && res.Status.StatusAnswered != token:
		return "waiting for a fresh reading of DRBD's in-flight figures"
	}
	var why []string
	for _, v := range peer.Volumes {
		if v.PeerDiskState != "UpToDate" || v.ReplicationState != "Established" {
			why = append(why, fmt.Sprintf("volume %d %s/%s", v.Number, or(v.ReplicationState, "unknown"), or(v.PeerDiskState, "unknown")))
		}
		if v.OutOfSyncBytes > 0 {
			why = append(why, fmt.Sprintf("volume %d %d bytes out of sync", v.Number, v.OutOfSyncBytes))
		}
		if protocol != srv1alpha1.ProtocolC && v.Pending > 0 {
			why = append(why, fmt.Sprintf("volume %d %d requests pending", v.Number, v.Pending))
		}
	}
	if len(peer.Volumes) == 0 {
		why = append(why, "no volume reported")
	}
	if protocol != srv1alpha1.ProtocolC && peer.APInFlightBytes > 0 {
		why = append(why, fmt.Sprintf("%d bytes of writes in flight", peer.APInFlightBytes))
	}
	return strings.Join(why, ", ")
}

// What a replica lacks before its first reading: not read at all, or, under
// protocol A, asked for a fresh reading its agent has not answered yet.
const (
	notRead      = "not read yet"
	firstReading = "its agent has not answered the first request for DRBD's in-flight figures"
)

// Wait reads the source replicas through c until the DR peer of each holds
// every write the source completed, or ctx ends. It returns "" when they all
// do, else what each lacking replica still lacks. A protocol A replica is
// asked for a fresh reading with each check.
func Wait(ctx context.Context, c client.Client, replicas []Replica) string {
	lacking := map[string]string{}
	for _, r := range replicas {
		lacking[r.Key.String()] = notRead
	}
	asked := map[string]string{}
	round := 0
	_ = wait.PollUntilContextCancel(ctx, PollInterval, true, func(ctx context.Context) (bool, error) {
		round++
		for _, r := range replicas {
			key := r.Key.String()
			if lacking[key] == "" {
				continue
			}
			res := &srv1alpha1.DRBDResource{}
			if err := c.Get(ctx, r.Key, res); err != nil {
				// The bound ending mid-read says nothing new: keep what the
				// last reading lacked.
				if ctx.Err() == nil || lacking[key] == notRead {
					lacking[key] = "reading it: " + err.Error()
				}
				continue
			}
			token := asked[key]
			if r.Protocol != srv1alpha1.ProtocolC && (token == "" || res.Status.StatusAnswered == token) {
				// Judge the answer to the last reading, then ask the next.
				why := Lacking(res, r.PeerNode, r.Protocol, token)
				if token != "" && why == "" {
					lacking[key] = ""
					continue
				}
				if token != "" {
					lacking[key] = why
				}
				next := fmt.Sprintf("drain-%d-%d", time.Now().UnixNano(), round)
				if err := ask(ctx, c, res, next); err != nil {
					if ctx.Err() == nil || lacking[key] == notRead {
						lacking[key] = "asking its agent for a reading: " + err.Error()
					}
					continue
				}
				asked[key] = next
				if token == "" {
					lacking[key] = firstReading
				}
				continue
			}
			if r.Protocol == srv1alpha1.ProtocolC {
				lacking[key] = Lacking(res, r.PeerNode, r.Protocol, "")
			}
		}
		for _, why := range lacking {
			if why != "" {
				return false, nil
			}
		}
		return true, nil
	})
	var out []string
	for key, why := range lacking {
		if why != "" {
			out = append(out, key+": "+why)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// ask sets res's spec.statusRequest to token: its agent reads DRBD's current
// figures and answers with status.statusAnswered.
func ask(ctx context.Context, c client.Client, res *srv1alpha1.DRBDResource, token string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"statusRequest": token}})
	if err != nil {
		return err
	}
	return c.Patch(ctx, res, client.RawPatch(types.MergePatchType, body))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
