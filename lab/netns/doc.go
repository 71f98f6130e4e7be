// Package netns is the lab's kernel plumbing: named network namespaces, veths, bridges,
// addresses and routes made through ip(8) (so they show up in `ip netns` and get the
// per-namespace /etc/netns/<ns>/resolv.conf), processes started inside a namespace, and
// sockets dialled inside one. It only ever deletes namespaces whose names carry the prefix
// it is given, and it only kills processes inside those namespaces or listed in pid files.
package netns
