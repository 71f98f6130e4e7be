// Package sharedtable holds Table, a map from 64-bit keys to 64-bit values whose equal
// parts are shared between tables. The hub records the hash of every object it writes
// in every member: at 1,000 members × 10,000 exports, 30 million entries, though the
// members of one view hold the same objects but for those of the exports they are a
// source of. A Table keeps its entries in a tree split by the keys' bits, and once
// sealed, each node is made canonical and kept once in a Pool by its content: two
// tables with the same entries under a prefix point to one node for it. What the hub
// holds per member is then the tree's nodes where that member differs from others.
package sharedtable
