package mover

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/siterecovery/siterecovery/test/sim/blockstore"
)

// Poll is how often the mover looks again at something it waits for.
const Poll = 100 * time.Millisecond

// PSKKey is the key of the pre-shared-key Secret both movers of a pair read;
// they connect only when the two keys are equal.
const PSKKey = "psk.txt"

// Fault makes the syncs of one ReplicationSource misbehave until cleared.
type Fault struct {
	// Fail, when set, fails every attempt with this message.
	Fail string
	// Stall writes half of the blocks of the next sync and then holds.
	Stall bool
}

// Transfer is one completed sync.
type Transfer struct {
	Cluster string
	Manual  string
	// Full: every block was sent (no base snapshot).
	Full  bool
	Bytes int64
}

// Mover is the simulated VolSync of every cluster of a test.
type Mover struct {
	data *blockstore.Store

	mu        sync.Mutex
	endpoints map[string][]endpoint
	faults    map[types.NamespacedName]Fault
	transfers map[types.NamespacedName][]Transfer
	jobs      map[string]*job
	// failures counts the failed attempts of a source's sync since its last
	// success, for the backoff of its retries.
	failures map[string]int
	// published holds the address each destination published, by
	// cluster/namespace/name; nextIP numbers the simulated ClusterIPs and seq
	// the registrations.
	published map[string]publication
	nextIP    int
	seq       int
}

// endpoint is a destination an address resolves to.
type endpoint struct {
	cluster string
	client  client.Client
	// reader reads the destination's cluster past the cache (its key Secret).
	reader client.Reader
	key    types.NamespacedName
	// seq orders registrations: of two destinations a name reaches, the
	// later one answers.
	seq int
}

// job is a sync in progress.
type job struct {
	manual   string
	src, dst string
	plan     []int
	done     int
	full     bool
	bytes    int64
	start    time.Time
}

// New returns a mover that moves the blocks of data.
func New(data *blockstore.Store) *Mover {
	return &Mover{data: data, endpoints: map[string][]endpoint{}, faults: map[types.NamespacedName]Fault{},
		transfers: map[types.NamespacedName][]Transfer{}, jobs: map[string]*job{}, failures: map[string]int{},
		published: map[string]publication{}}
}

// maxBackoff caps the wait before a failed mover runs again, so that a test
// sees it recover soon after its fault clears.
const maxBackoff = 2 * time.Second

// backoff counts a failed attempt of the source key and returns the wait
// before the next one: Poll, doubling with each failure up to maxBackoff.
func (m *Mover) backoff(key string) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.failures[key]
	m.failures[key] = n + 1
	d := Poll << min(n, 5)
	return min(d, maxBackoff)
}

// succeeded forgets the failures of the source key once its sync succeeded.
func (m *Mover) succeeded(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.failures, key)
}

// SetFault sets (or with nil clears) the fault of a ReplicationSource.
func (m *Mover) SetFault(namespace, name string, f *Fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: namespace, Name: name}
	if f == nil {
		delete(m.faults, key)
		return
	}
	m.faults[key] = *f
}

func (m *Mover) fault(key types.NamespacedName) (Fault, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.faults[key]
	return f, ok
}

// Transfers lists the completed syncs of a ReplicationSource, oldest first.
func (m *Mover) Transfers(namespace, name string) []Transfer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Transfer(nil), m.transfers[types.NamespacedName{Namespace: namespace, Name: name}]...)
}

// record adds a completed sync once: a retried write of the same trigger's
// completion is the same sync.
func (m *Mover) record(key types.NamespacedName, t Transfer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if all := m.transfers[key]; len(all) > 0 && all[len(all)-1].Cluster == t.Cluster && all[len(all)-1].Manual == t.Manual {
		return
	}
	m.transfers[key] = append(m.transfers[key], t)
}

// register publishes a destination's address. Both clusters may publish the
// same address while a destination moves between them (a relocate creates
// the new one before the old one goes); the latest publisher answers, and
// when it goes the earlier one answers again, as a service address follows
// its remaining endpoints.
func (m *Mover) register(address string, e endpoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.endpoints[address] {
		if o.cluster == e.cluster && o.key == e.key {
			e.seq = o.seq
		}
	}
	if e.seq == 0 {
		m.seq++
		e.seq = m.seq
	}
	list := slices.DeleteFunc(m.endpoints[address], func(o endpoint) bool { return o.cluster == e.cluster })
	m.endpoints[address] = append(list, e)
}

func (m *Mover) unregister(address, cluster string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := slices.DeleteFunc(m.endpoints[address], func(o endpoint) bool { return o.cluster == cluster })
	if len(list) == 0 {
		delete(m.endpoints, address)
		return
	}
	m.endpoints[address] = list
}

func (m *Mover) resolvePublished(address string) (endpoint, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	list := m.endpoints[address]
	if len(list) == 0 {
		return endpoint{}, false
	}
	return list[len(list)-1], true
}

// allEndpoints lists every registered destination.
func (m *Mover) allEndpoints() []endpoint {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []endpoint
	for _, list := range m.endpoints {
		out = append(out, list...)
	}
	return out
}

func (m *Mover) job(key string) *job {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobs[key]
}

func (m *Mover) setJob(key string, j *job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if j == nil {
		delete(m.jobs, key)
		return
	}
	m.jobs[key] = j
}
