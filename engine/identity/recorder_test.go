package identity

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestRecorderStartsWithItsFirstEvent: an account's recorder holds no broadcaster until an
// Event is recorded; then it writes it, and Close stops it.
func TestRecorderStartsWithItsFirstEvent(t *testing.T) {
	kube := fake.NewClientset()
	rec := &lazyRecorder{events: kube.CoreV1()}
	if rec.broadcaster != nil {
		t.Fatal("a broadcaster before any Event")
	}
	parent := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a", UID: "u"}}
	rec.Event(parent, corev1.EventTypeNormal, "Asked", "by a hook")
	deadline := time.Now().Add(30 * time.Second)
	for {
		list, err := kube.CoreV1().Events("team-a").List(context.Background(), metav1.ListOptions{})
		if err == nil && len(list.Items) == 1 && list.Items[0].Reason == "Asked" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Event was not written: %v %v", list, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	rec.close()
	rec.Event(parent, corev1.EventTypeNormal, "After", "close") // dropped, no panic
}
