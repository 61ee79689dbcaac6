package integration

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

var metav1UpdateOptions = metav1.UpdateOptions{}
