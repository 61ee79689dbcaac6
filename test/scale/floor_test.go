package scale

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/enginetest"
)

// parent is a Fanout as created: what the floor needs to know of it.
type parent struct {
	name string
	uid  types.UID
}

func parentName(i int) string { return fmt.Sprintf("fanout-%05d", i) }

// floorOptions vary how the floor writes a parent's children.
type floorOptions struct {
	// apply writes them by server-side apply, as the engine does, instead of create.
	apply bool
	// childWriters is how many of one parent's children are written at once; below 2, one by
	// one. The engine writes up to 8 at once.
	childWriters int
}

// runFloor is the floor: the least a hand-written controller that already knows every parent
// must send for the same result, with the same number of workers sharing one client. Per
// parent it creates each child ConfigMap, shaped and labelled as the engine's and controlled
// by the parent, then writes the parent's status with one merge patch (a patch needs no
// resourceVersion, so no read). It returns the time from the first request to the last
// response.
func runFloor(ctx context.Context, cfg *rest.Config, ns string, parents []parent, children, workers int, opts floorOptions) (time.Duration, error) {
	status := []byte(fmt.Sprintf(`{"status":{"children":%d,"observedGeneration":1}}`, children))
	return enginetest.BareWrites(ctx, cfg, workers, len(parents), func(ctx context.Context, c kubernetes.Interface, i int) error {
		p := parents[i]
		labels := map[string]string{"fanout": p.name}
		yes := true
		ref := metav1.OwnerReference{APIVersion: "bench.metascript.dev/v1", Kind: "Fanout", Name: p.name, UID: p.uid,
			Controller: &yes, BlockOwnerDeletion: &yes}
		write := func(j int) error {
			name, data := fmt.Sprintf("%s-%d", p.name, j), map[string]string{"parent": p.name, "index": fmt.Sprint(j)}
			if opts.apply {
				cm := applycorev1.ConfigMap(name, ns).WithLabels(labels).WithData(data).WithOwnerReferences(
					applymetav1.OwnerReference().WithAPIVersion(ref.APIVersion).WithKind(ref.Kind).WithName(ref.Name).
						WithUID(ref.UID).WithController(true).WithBlockOwnerDeletion(true))
				_, err := c.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "floor", Force: true})
				return err
			}
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: []metav1.OwnerReference{ref}},
				Data:       data,
			}
			_, err := c.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err := writeAll(children, opts.childWriters, write); err != nil {
			return err
		}
		// The core client's REST client reaches any path; the status write goes over the same
		// connection as the creates.
		return c.CoreV1().RESTClient().Patch(types.MergePatchType).
			AbsPath("/apis/bench.metascript.dev/v1/namespaces", ns, "fanouts", p.name, "status").
			Body(status).Do(ctx).Error()
	})
}

// writeAll calls write(j) for j in [0, n), at most atOnce at a time, and returns
// the first error.
func writeAll(n, atOnce int, write func(j int) error) error {
	if atOnce < 2 {
		for j := range n {
			if err := write(j); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	sem := make(chan struct{}, atOnce)
	var wg sync.WaitGroup
	for j := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[j] = write(j)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createParents creates n Fanouts in ns with workers goroutines and returns them in order.
func createParents(ctx context.Context, c dynamic.Interface, ns string, n, children, workers int) ([]parent, error) {
	out := make([]parent, n)
	err := enginetest.Parallel(ctx, workers, n, func(ctx context.Context, i int) error {
		created, err := c.Resource(fanouts).Namespace(ns).Create(ctx, enginetest.Fanout(parentName(i), children), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		out[i] = parent{name: created.GetName(), uid: created.GetUID()}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("creating parents: %w", err)
	}
	return out, nil
}

// createUnselected creates n ConfigMaps in ns that look like an application's own: labelled,
// a few hundred bytes of data, no owner. No controller of the benchmark selects them.
func createUnselected(ctx context.Context, c dynamic.Interface, ns string, n int) error {
	payload := strings.Repeat("x", 256)
	err := enginetest.Parallel(ctx, 20, n, func(ctx context.Context, i int) error {
		cm := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("app-%06d", i), "namespace": ns,
				"labels": map[string]any{"app": "unrelated", "tier": fmt.Sprint(i % 10)}},
			"data": map[string]any{"settings": payload},
		}}
		_, err := c.Resource(configMaps).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating unselected ConfigMaps: %w", err)
	}
	return nil
}
