package reconcile

import "sync"

// inParallel calls do(i) for every i in [0, n), at most limit at once, and returns once every
// call has. The one bounded pool of a reconcile: its hook calls and its child writes.
func inParallel(n, limit int, do func(i int)) {
	switch n {
	case 0:
		return
	case 1:
		do(0)
		return
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			do(i)
		}()
	}
	wg.Wait()
}
