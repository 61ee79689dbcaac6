package controlplane

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestStart proves the harness serves the API and installs the project's CRDs.
func TestStart(t *testing.T) {
	cp, err := Start(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Stop()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("default namespace: %v", err)
	}
	list, err := cs.Discovery().ServerResourcesForGroupVersion("metascript.dev/v1alpha1")
	if err != nil {
		t.Fatalf("CRDs not served: %v", err)
	}
	if len(list.APIResources) == 0 {
		t.Fatal("metascript.dev/v1alpha1 serves no resources")
	}
}
