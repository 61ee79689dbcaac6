package fairshare

// Flow is who asks for a share of something the engine's controllers share: a tenant, and
// one of its controllers. Shares are divided among tenants first, so that a tenant with many
// controllers gets no more than one with a single controller; a tenant's share is served to
// its controllers in turn.
//
// A namespaced controller's tenant is its namespace; a cluster-scoped controller, written by
// the platform, is a tenant of its own (TenantOf).
type Flow struct {
	Tenant, Controller string
}

// TenantOf is the tenant of the controller named ref (compositecontroller/NAME, ...): the
// namespace of a namespaced controller, the controller itself otherwise.
func TenantOf(namespace, ref string) string {
	if namespace != "" {
		return "namespace/" + namespace
	}
	return ref
}

// ControllerFlow is the flow of the controller ref of namespace ("" for a cluster-scoped
// controller).
func ControllerFlow(namespace, ref string) Flow {
	return Flow{Tenant: TenantOf(namespace, ref), Controller: ref}
}

// rotation holds waiters by flow and serves them in turn: tenants in turn, within a tenant
// its controllers in turn, and a controller's waiters in the order they came. It is not safe
// for concurrent use: its owner's lock guards it.
type rotation struct {
	// tenants are the tenants with waiters, in the order they are served.
	tenants []string
	queues  map[string]*tenantQueue
}

type tenantQueue struct {
	// controllers are the tenant's controllers with waiters, in the order they are served.
	controllers []string
	waiters     map[string][]chan struct{}
	n           int
}

// push queues a waiter of flow f behind every other of f.
func (r *rotation) push(f Flow, ch chan struct{}) {
	if r.queues == nil {
		r.queues = map[string]*tenantQueue{}
	}
	q := r.queues[f.Tenant]
	if q == nil {
		q = &tenantQueue{waiters: map[string][]chan struct{}{}}
		r.queues[f.Tenant] = q
		r.tenants = append(r.tenants, f.Tenant)
	}
	if len(q.waiters[f.Controller]) == 0 {
		q.controllers = append(q.controllers, f.Controller)
	}
	q.waiters[f.Controller] = append(q.waiters[f.Controller], ch)
	q.n++
}

// waiting reports whether tenant has waiters.
func (r *rotation) waiting(tenant string) bool { return r.queues[tenant] != nil }

// waiters counts tenant's waiters.
func (r *rotation) waiters(tenant string) int {
	if q := r.queues[tenant]; q != nil {
		return q.n
	}
	return 0
}

// head is the waiter next of tenant's (nil when it has none): the first of the controller
// whose turn it is.
func (r *rotation) head(tenant string) chan struct{} {
	q := r.queues[tenant]
	if q == nil {
		return nil
	}
	return q.waiters[q.controllers[0]][0]
}

// empty reports whether no one waits.
func (r *rotation) empty() bool { return len(r.tenants) == 0 }

// next takes the first waiter in turn whose tenant may be served now (may), and moves its
// tenant behind the others, and its controller behind the tenant's others. blocked reports
// whether some tenant was passed over because may refused it.
func (r *rotation) next(may func(tenant string) bool) (f Flow, ch chan struct{}, ok, blocked bool) {
	for i, tenant := range r.tenants {
		if !may(tenant) {
			blocked = true
			continue
		}
		q := r.queues[tenant]
		controller := q.controllers[0]
		queue := q.waiters[controller]
		ch = queue[0]
		q.controllers = q.controllers[1:]
		if len(queue) == 1 {
			delete(q.waiters, controller)
		} else {
			q.waiters[controller] = queue[1:]
			q.controllers = append(q.controllers, controller)
		}
		q.n--
		r.tenants = append(r.tenants[:i:i], r.tenants[i+1:]...)
		if q.n == 0 {
			delete(r.queues, tenant)
		} else {
			r.tenants = append(r.tenants, tenant)
		}
		return Flow{Tenant: tenant, Controller: controller}, ch, true, blocked
	}
	return Flow{}, nil, false, blocked
}

// remove takes out a waiter that gave up; false when it is not queued (it was served).
func (r *rotation) remove(f Flow, ch chan struct{}) bool {
	q := r.queues[f.Tenant]
	if q == nil {
		return false
	}
	queue := q.waiters[f.Controller]
	i := -1
	for j, c := range queue {
		if c == ch {
			i = j
			break
		}
	}
	if i < 0 {
		return false
	}
	q.n--
	if len(queue) > 1 {
		q.waiters[f.Controller] = append(queue[:i:i], queue[i+1:]...)
		return true
	}
	delete(q.waiters, f.Controller)
	q.controllers = without(q.controllers, f.Controller)
	if q.n == 0 {
		delete(r.queues, f.Tenant)
		r.tenants = without(r.tenants, f.Tenant)
	}
	return true
}

// without is names without the first name equal to n, in a new slice.
func without(names []string, n string) []string {
	for i, name := range names {
		if name == n {
			return append(names[:i:i], names[i+1:]...)
		}
	}
	return names
}
