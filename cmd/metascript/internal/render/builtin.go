package render

// builtin are the resources a Kubernetes API server serves without CustomResourceDefinitions
// that controllers commonly read or write, and the engine's own: their kind, scope and
// whether they have a status subresource, as discovery reports them. A resource missing
// here is resolved from its CustomResourceDefinition, given like any other file.
var builtin = []struct {
	apiVersion, resource, kind string
	namespaced, status         bool
}{
	{"v1", "configmaps", "ConfigMap", true, false},
	{"v1", "secrets", "Secret", true, false},
	{"v1", "services", "Service", true, true},
	{"v1", "serviceaccounts", "ServiceAccount", true, false},
	{"v1", "pods", "Pod", true, true},
	{"v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, true},
	{"v1", "persistentvolumes", "PersistentVolume", false, true},
	{"v1", "namespaces", "Namespace", false, true},
	{"v1", "nodes", "Node", false, true},
	{"v1", "endpoints", "Endpoints", true, false},
	{"v1", "events", "Event", true, false},
	{"v1", "limitranges", "LimitRange", true, false},
	{"v1", "resourcequotas", "ResourceQuota", true, true},
	{"v1", "replicationcontrollers", "ReplicationController", true, true},
	{"apps/v1", "deployments", "Deployment", true, true},
	{"apps/v1", "statefulsets", "StatefulSet", true, true},
	{"apps/v1", "daemonsets", "DaemonSet", true, true},
	{"apps/v1", "replicasets", "ReplicaSet", true, true},
	{"apps/v1", "controllerrevisions", "ControllerRevision", true, false},
	{"batch/v1", "jobs", "Job", true, true},
	{"batch/v1", "cronjobs", "CronJob", true, true},
	{"rbac.authorization.k8s.io/v1", "roles", "Role", true, false},
	{"rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", true, false},
	{"rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", false, false},
	{"rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", false, false},
	{"networking.k8s.io/v1", "ingresses", "Ingress", true, true},
	{"networking.k8s.io/v1", "ingressclasses", "IngressClass", false, false},
	{"networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", true, false},
	{"discovery.k8s.io/v1", "endpointslices", "EndpointSlice", true, false},
	{"policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", true, true},
	{"autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, true},
	{"coordination.k8s.io/v1", "leases", "Lease", true, false},
	{"storage.k8s.io/v1", "storageclasses", "StorageClass", false, false},
	{"scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", false, false},
	{"apiextensions.k8s.io/v1", "customresourcedefinitions", "CustomResourceDefinition", false, true},
	{"metascript.dev/v1alpha1", "compositecontrollers", "CompositeController", false, true},
	{"metascript.dev/v1alpha1", "decoratorcontrollers", "DecoratorController", false, true},
	{"metascript.dev/v1alpha1", "mapcontrollers", "MapController", false, true},
	{"metascript.dev/v1alpha1", "namespacedcompositecontrollers", "NamespacedCompositeController", true, true},
	{"metascript.dev/v1alpha1", "namespaceddecoratorcontrollers", "NamespacedDecoratorController", true, true},
	{"metascript.dev/v1alpha1", "namespacedmapcontrollers", "NamespacedMapController", true, true},
	{"metascript.dev/v1alpha1", "controllerrevisions", "ControllerRevision", true, false},
	{"metascript.dev/v1alpha1", "hooklibraries", "HookLibrary", false, true},
	{"metascript.dev/v1alpha1", "namespacedhooklibraries", "NamespacedHookLibrary", true, true},
}
