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
	m.w.advance(time.Now())
	err := fn(m.w)
	if notify {
		m.version++
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
