package converge

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// bareClientGo is the baseline: a plain client-go program creating the same parents×children
// ConfigMaps the engine creates, shaped the same, with workers goroutines sharing one client
// of the given config (and so its QPS and Burst). With apply it writes them by server-side
// apply, as the engine does, instead of create. It returns the time from the first request
// to the last response.
func bareClientGo(ctx context.Context, cfg *rest.Config, ns string, parents, children, workers int, apply bool) (time.Duration, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct{ parent, index int }
	jobs := make(chan job)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				name := parentName(j.parent)
				labels := map[string]string{"fanout": name}
				data := map[string]string{"parent": name, "index": fmt.Sprint(j.index)}
				cmName := fmt.Sprintf("%s-%d", name, j.index)
				var err error
				if apply {
					cm := applycorev1.ConfigMap(cmName, ns).WithLabels(labels).WithData(data)
					_, err = client.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "baseline", Force: true})
				} else {
					cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Labels: labels}, Data: data}
					_, err = client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				}
				if err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
	go func() {
		defer close(jobs)
		for p := range parents {
			for i := range children {
				select {
				case jobs <- job{p, i}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return elapsed, nil
}

func parentName(i int) string { return fmt.Sprintf("fanout-%04d", i) }
