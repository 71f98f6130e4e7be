// Package devroute keeps the routes a cable driver owns — remote CIDRs through the
// driver's own device, in Strait's table, marked with Strait's route protocol — exactly as
// wanted, and finds the underlay MTU a driver subtracts its overhead from. It touches only
// routes on the one device it is given that carry that protocol.
package devroute
