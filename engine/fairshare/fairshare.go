// Package fairshare shares what the engine's controllers share — reconcile seats, the cores
// inline hooks run on, the API server's rate — among tenants fairly, so that a tenant with
// many slow, hung, failing or burning controllers slows itself and no one else. It is the
// engine's counterpart of the API server's Priority and Fairness: a tenant holds at most its
// share of what others want, and waiters are served in turn, tenant by tenant.
package fairshare
