// Package bigset builds the large clusterset the scale benchmarks and tests share: many
// clusters on globalnet exporting many ClusterSetIP services, with the facts a hub would
// observe in the members. It is pure data; it starts nothing and talks to nothing.
package bigset
