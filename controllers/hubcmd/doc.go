// Package hubcmd is the `straitd hub` command: it reads the flags and starts a
// controller-runtime manager with the ClusterSet reconciler of controllers/, the
// validating webhook of webhook/ and, with --webhook-certs=self, the webhook's
// certificate rotation. The reconcile and the validation live in those packages; this
// one must not grow any logic of theirs.
package hubcmd
