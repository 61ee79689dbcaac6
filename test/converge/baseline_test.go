package converge

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"metascript.dev/metascript/test/enginetest"
)

// bareClientGo is the baseline: a plain client-go program creating the same parents×children
// ConfigMaps the engine creates, shaped the same, with workers goroutines sharing one client
// of the given config (and so its QPS and Burst). With apply it writes them by server-side
// apply, as the engine does, instead of create. With status it also writes each parent's
// status, {"children": n}, once, after its last child, as the engine's hook asks: the
// parents must exist in ns. It returns the time from the first request to the last response.
func bareClientGo(ctx context.Context, cfg *rest.Config, ns string, parents, children, workers int, apply, status bool) (time.Duration, error) {
	per := children // writes per parent
	if status {
		per++
	}
	return enginetest.BareWrites(ctx, cfg, workers, parents*per, func(ctx context.Context, client kubernetes.Interface, i int) error {
		name := parentName(i / per)
		if i%per == children {
			body := fmt.Sprintf(`{"status":{"children":%d}}`, children)
			return client.CoreV1().RESTClient().Patch(types.MergePatchType).
				AbsPath("/apis/bench.metascript.dev/v1/namespaces", ns, "fanouts", name, "status").
				Body([]byte(body)).Do(ctx).Error()
		}
		labels := map[string]string{"fanout": name}
		data := map[string]string{"parent": name, "index": fmt.Sprint(i % per)}
		cmName := fmt.Sprintf("%s-%d", name, i%per)
		if apply {
			cm := applycorev1.ConfigMap(cmName, ns).WithLabels(labels).WithData(data)
			_, err := client.CoreV1().ConfigMaps(ns).Apply(ctx, cm, metav1.ApplyOptions{FieldManager: "baseline", Force: true})
			return err
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Labels: labels}, Data: data}
		_, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err
	})
}

func parentName(i int) string { return fmt.Sprintf("fanout-%04d", i) }
