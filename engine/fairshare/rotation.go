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

// rotation is turns of waiters that wait on a channel: those of Slots, Bytes and Rate.
type rotation = turns[chan struct{}]

// turns holds waiters (W: what a waiter is known by, a channel or a Queue's item) by flow and
// serves them in turn: tenants in turn, within a tenant its controllers in turn, and a
// controller's waiters in the order they came. It is not safe for concurrent use: its
// owner's lock guards it.
type turns[W comparable] struct {
	// tenants are the tenants with waiters, in the order they are served.
	tenants []string
	queues  map[string]*tenantQueue[W]
}

type tenantQueue[W comparable] struct {
	// controllers are the tenant's controllers with waiters, in the order they are served.
	controllers []string
	waiters     map[string][]W
	n           int
}

// push queues a waiter of flow f behind every other of f.
func (r *turns[W]) push(f Flow, ch W) {
	if r.queues == nil {
		r.queues = map[string]*tenantQueue[W]{}
	}
	q := r.queues[f.Tenant]
	if q == nil {
		q = &tenantQueue[W]{waiters: map[string][]W{}}
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
func (r *turns[W]) waiting(tenant string) bool { return r.queues[tenant] != nil }

// waiters counts tenant's waiters.
func (r *turns[W]) waiters(tenant string) int {
	if q := r.queues[tenant]; q != nil {
		return q.n
	}
	return 0
}

// head is the waiter next of tenant's (the zero W when it has none): the first of the controller
// whose turn it is.
func (r *turns[W]) head(tenant string) W {
	q := r.queues[tenant]
	if q == nil {
		var none W
		return none
	}
	return q.waiters[q.controllers[0]][0]
}

// empty reports whether no one waits.
func (r *turns[W]) empty() bool { return len(r.tenants) == 0 }

// next takes the first waiter in turn whose tenant may be served now (may), and moves its
// tenant behind the others, and its controller behind the tenant's others. blocked reports
// whether some tenant was passed over because may refused it.
func (r *turns[W]) next(may func(tenant string) bool) (f Flow, ch W, ok, blocked bool) {
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
	return Flow{}, ch, false, blocked
}

// remove takes out a waiter that gave up; false when it is not queued (it was served).
func (r *turns[W]) remove(f Flow, ch W) bool {
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
