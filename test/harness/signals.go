package harness

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// envtest starts etcd and kube-apiserver in their own process groups, so an interrupt of
// the test binary does not reach them. While zones are running, SIGINT and SIGTERM stop
// them before the signal is delivered again with its default action. (A `go test
// -timeout` panic cannot be intercepted; processes can leak in that case.)

var (
	liveMu    sync.Mutex
	liveZones = map[*Zone]struct{}{}
	sigCh     chan os.Signal
)

// track registers z for the signal handler until forget(z).
func track(z *Zone) {
	liveMu.Lock()
	defer liveMu.Unlock()
	liveZones[z] = struct{}{}
	if sigCh == nil {
		sigCh = make(chan os.Signal, 1)
		signal.Notify(sigCh, os.Interrupt, syscall.SIGTERM)
		go stopOnSignal(sigCh)
	}
}

func forget(z *Zone) {
	liveMu.Lock()
	defer liveMu.Unlock()
	delete(liveZones, z)
}

func stopOnSignal(ch chan os.Signal) {
	sig := <-ch
	liveMu.Lock()
	zones := make([]*Zone, 0, len(liveZones))
	for z := range liveZones {
		zones = append(zones, z)
	}
	liveMu.Unlock()
	var wg sync.WaitGroup
	for _, z := range zones {
		wg.Go(func() { _ = z.Stop() })
	}
	wg.Wait()
	signal.Reset(os.Interrupt, syscall.SIGTERM)
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), s)
	}
}
