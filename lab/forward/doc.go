// Package forward is the lab's loopback forwarder: a TCP listener on the host's
// 127.0.0.1 whose connections are spliced to an address inside a network namespace, so
// kubectl on the host reaches API servers that live in namespaces with no route to it.
// It opens no listener anywhere but the address it is given.
package forward
