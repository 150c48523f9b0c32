package flow

import (
	"errors"
	"sync"
)

// ForEach calls fn(i) for every i in [0, n) with at most limit calls in flight
// and joins their errors. Reconcilers use it to send many independent writes (one
// per VM or per DRBD resource) at once instead of one round trip after another.
func ForEach(limit, n int, fn func(i int) error) error {
	if limit < 1 {
		limit = 1
	}
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
		sem  = make(chan struct{}, limit)
	)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
