package faultmatrix

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/siterecovery/siterecovery/test/sim/guest"
)

// Data is the safety recorder's data invariant: no write a guest saw
// acknowledged is lost or corrupt where its VM starts. Each time the VMI
// recorder sees a VM start on a cluster, the VM's guest reads every block it
// wrote through the device the VM uses there and compares the contents with
// its log of acknowledged writes. A planned flow must never lose one;
// an unplanned one may lose at most what DRBD's protocol allows, which the
// flow's own test bounds.
type Data struct {
	ctx      context.Context
	vmis     *VMIs
	guests   *guest.Guests
	clusters map[string]*guest.Cluster
	vms      map[string]types.NamespacedName // by name

	mu     sync.Mutex
	checks []string // "<vm> on <cluster>: <result>"
	losses []string
	wg     sync.WaitGroup
}

// CheckData verifies the guests of vms each time the VMI recorder sees one
// start, until ctx ends.
func CheckData(ctx context.Context, vmis *VMIs, guests *guest.Guests, clusters map[string]*guest.Cluster, vms ...types.NamespacedName) *Data {
	d := &Data{ctx: ctx, vmis: vmis, guests: guests, clusters: clusters, vms: map[string]types.NamespacedName{}}
	for _, vm := range vms {
		d.vms[vm.Name] = vm
	}
	vmis.OnStart(d.started)
	return d
}

func (d *Data) started(cluster, name string) {
	vm, ok := d.vms[name]
	c := d.clusters[cluster]
	if !ok || c == nil {
		return
	}
	d.wg.Add(1)
	go d.check(cluster, c, vm)
}

func (d *Data) check(cluster string, c *guest.Cluster, vm types.NamespacedName) {
	defer d.wg.Done()
	start := time.Now()
	// The instance is there as soon as KubeVirt created it; its disks answer
	// once it runs. A start that never reads is a finding of its own.
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := d.guests.Verify(d.ctx, c, vm)
		if err == nil {
			d.record(fmt.Sprintf("%s on %s (started %s, read %s later): %s", vm, cluster, clock(start), time.Since(start).Round(time.Millisecond), res), res.Lost > 0 || res.Corrupt > 0)
			return
		}
		if d.ctx.Err() != nil {
			return
		}
		// A flow may stop the instance again before its disks answer (the
		// next cell demotes the replica under it). It then ran no guest on
		// these blocks, and the next start anywhere reads the same writes.
		if d.vmis.EndedSince(cluster, vm.Name, start) {
			d.record(fmt.Sprintf("%s on %s (started %s): stopped before its data could be read (%v); the next start checks it", vm, cluster, clock(start), err), false)
			return
		}
		if time.Now().After(deadline) {
			d.record(fmt.Sprintf("%s on %s (started %s): its data could not be read within 30s: %v", vm, cluster, clock(start), err), true)
			return
		}
		select {
		case <-d.ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (d *Data) record(line string, lost bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.checks = append(d.checks, line)
	if lost {
		d.losses = append(d.losses, line)
	}
}

// Losses waits for the checks under way and lists every start where an
// acknowledged write was lost or corrupt, or could not be read.
func (d *Data) Losses() []string {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.losses...)
}

// Checks waits for the checks under way and lists every check's outcome.
func (d *Data) Checks() []string {
	d.wg.Wait()
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.checks...)
}
