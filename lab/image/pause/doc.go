// Command pause is the sandbox of every pod on the lab's real nodes: it holds the pod's
// namespaces, reaps the zombies the pod's processes leave to it (it is PID 1 when the
// pod shares its process namespace) and exits on SIGTERM or SIGINT.
package main
