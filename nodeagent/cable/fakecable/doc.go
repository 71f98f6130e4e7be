// Package fakecable is an in-memory cable.Driver for the gateway's state-sequence tests:
// it keeps what the last Converge asked for and prints it as a stable text dump. It
// touches nothing on the node. The real drivers are tested against the real kernel in
// their own packages.
package fakecable
