package sim

import (
	"sync"
	"time"
)

// memWorlds holds the worlds kept in this process's memory, by state dir.
var memWorlds sync.Map // string → *memWorld

// memWorld is a world without its file: one mutex instead of the file lock,
// and a version counter instead of the file's identity for event streams.
type memWorld struct {
	mu      sync.Mutex
	w       *World
	version uint64
	// still is whether time alone changes nothing (World.timeDriven is false):
	// advance then only moves the clock. Worked out after each change, not on
	// every call: each node's event stream reads the world after every change,
	// and walking every resource on each read made a step of N replicas cost
	// N² walks.
	still bool
	// observers see the world after every change, under its lock.
	observers []func(*World)
}

// UseMemory keeps the world of dir in this process's memory instead of in
// dir/state.json. It is for tests whose simulated nodes all run in this process
// (the in-process executor): reading, decoding, encoding and writing the whole
// state under a file lock is then most of what a drbdadm call costs. A
// drbdsim process would not see the world; Forget drops it.
func UseMemory(dir string) { memWorlds.LoadOrStore(dir, &memWorld{w: newWorld()}) }

// Forget drops the in-memory world of dir.
func Forget(dir string) { memWorlds.Delete(dir) }

func memoryWorld(dir string) (*memWorld, bool) {
	m, ok := memWorlds.Load(dir)
	if !ok {
		return nil, false
	}
	return m.(*memWorld), true
}

// update is Update on an in-memory world. A call that notifies counts as a
// change; the clock alone does not.
func (m *memWorld) update(fn func(w *World) error, notify bool) error {
	m.mu.Lock()
	advanced := !m.still
	if now := time.Now(); m.still {
		m.w.LastTick = now
	} else {
		m.w.advance(now)
	}
	m.w.touched = nil
	err := fn(m.w)
	m.w.settle()
	if advanced {
		m.w.touched = nil // time moved every resource in resync
	}
	// Every change notifies; a call that does not can only have moved time,
	// which ends a resync but never starts one.
	if notify || !m.still {
		m.still = !m.w.timeDriven()
	}
	if notify {
		m.w.onHost = nil
		m.version++
		m.w.changed(m.version)
		for _, o := range m.observers {
			o(m.w)
		}
	}
	m.mu.Unlock()
	if notify {
		changes.notify()
	}
	return err
}

func (m *memWorld) currentVersion() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.version
}

// Observe calls fn with the in-memory world of dir after every change, under
// the world's lock, so that a safety check sees every state the nodes could
// see and none in between. fn must not call back into the simulator. It
// reports false when dir's world is not kept in memory.
func Observe(dir string, fn func(w *World)) bool {
	m, ok := memoryWorld(dir)
	if !ok {
		return false
	}
	m.mu.Lock()
	m.observers = append(m.observers, fn)
	m.mu.Unlock()
	return true
}
