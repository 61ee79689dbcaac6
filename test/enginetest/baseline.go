package enginetest

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BareWrites is the baseline the benchmarks measure the engine against: a plain client-go
// program making n writes, write(ctx, client, i) for i in [0, n), with workers goroutines
// sharing one client of cfg (and so its QPS and Burst). It returns the time from the first
// request to the last response, or the first error, after which it stops.
func BareWrites(ctx context.Context, cfg *rest.Config, workers, n int,
	write func(ctx context.Context, client kubernetes.Interface, i int) error) (time.Duration, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := Parallel(ctx, workers, n, func(ctx context.Context, i int) error { return write(ctx, client, i) }); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// Parallel calls do(ctx, i) for i in [0, n) on workers goroutines. It returns the first
// error, after which it starts no more calls and cancels the context of those running.
func Parallel(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := do(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range n {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// CreateConfigMaps is BareWrites creating the n ConfigMaps that object makes.
func CreateConfigMaps(ctx context.Context, cfg *rest.Config, workers, n int, object func(i int) *corev1.ConfigMap) (time.Duration, error) {
	return BareWrites(ctx, cfg, workers, n, func(ctx context.Context, c kubernetes.Interface, i int) error {
		cm := object(i)
		_, err := c.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}
