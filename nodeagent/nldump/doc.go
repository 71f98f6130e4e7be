// Package nldump retries the netlink dumps that the kernel interrupted.
//
// A dump (links, addresses, routes, rules, neighbours) that races a change to the same
// table ends with NLM_F_DUMP_INTR, and vishvananda/netlink returns what it read with
// ErrDumpInterrupted ("results may be incomplete or inconsistent"). On a node where
// pods come and go, or a gateway that is creating its cable device, that is common; a
// sync that fails on it waits for the controller's backoff, so the dump is read again
// at once instead.
package nldump
