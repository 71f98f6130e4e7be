// Package gitserver is the lab's git server: it serves bare repositories over git's smart
// HTTP protocol (clone, fetch and push) by running Debian's `git http-backend` as a CGI
// program behind net/http/cgi, on a listener the caller opens (the lab opens it inside the
// hub's network namespace, so Flux's source-controller clones from it like from any git
// host). It also creates those repositories from a directory and commits to them, with a
// fixed identity and date so the same files give the same commit hashes.
//
// It owns the repositories under the root it is given and the git processes it starts. It
// runs only the git CLI, with the host's and the user's git configuration shut out, and
// must not touch any other repository or the caller's listener after Serve returns.
package gitserver
