// Package keytable holds Table, a map from 64-bit keys to small values kept as an
// array sorted by key (the value's bytes and the key's eight, nothing more) with a small
// map of recent changes in front of it. The hub keeps one entry per object it writes in
// every member, millions at a thousand members, where a Go map spends three to four
// times the entry's bytes on its groups, control bytes and the slack of doubling.
package keytable
