package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
)

// editController reads a CompositeController, lets edit change it, and updates it, again on
// a conflict: the engine writes the controller's status concurrently.
func editController(t *testing.T, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	editControllerOf(t, "CompositeController", name, edit)
}

// editControllerOf is editController for a controller resource of any kind.
func editControllerOf(t *testing.T, kind, name string, edit func(*unstructured.Unstructured)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := env.Get(t, "metascript.dev/v1alpha1", kind, "", name)
		edit(cur)
		_, err := env.Client(t, cur).Update(t.Context(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// conditionMessage is the message of the condition of type typ in obj's status.conditions.
func conditionMessage(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["message"].(string)
			return s
		}
	}
	return ""
}

// conditionReason is the reason of the condition of type typ in obj's status.conditions.
func conditionReason(obj *unstructured.Unstructured, typ string) string {
	list, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range list {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			s, _ := m["reason"].(string)
			return s
		}
	}
	return ""
}
