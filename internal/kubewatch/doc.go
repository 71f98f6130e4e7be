// Package kubewatch keeps Strait's informers close behind an API server that comes back
// after an outage.
//
// client-go's reflector backs off from 0.8 s to 30 s (60 s with jitter) while its API
// server does not answer, and a shared informer offers no way to change that. After a
// 15 s outage an agent's informers could then stay blind for another 20 s: a plain node
// kept routing to a gateway that had lost the Lease long after the API server answered
// again. Resuming wraps a ListerWatcher so that a List or Watch the API server did not
// answer at all (refused, reset or timed-out connection) is tried again inside the call,
// on a short capped back-off, and the reflector never counts it as a failure. Any answer
// of the API server, an error status included, goes to the reflector as it is, with its
// own back-off: a server that is up but overloaded (429, 5xx) is not pressed harder.
package kubewatch
