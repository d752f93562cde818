package sim

import "slices"

// prefixCache is a radix tree of the token sequences the engine has seen, as
// SGLang's RadixCache keeps the KV of earlier prompts and answers: a prompt
// that starts with a cached sequence has that part already computed, so only
// the rest is prefilled. Edges hold runs of ids; a node is split where two
// sequences part. When the tree holds more than its capacity the least
// recently used leaves are dropped (a leaf's tail first), as SGLang evicts
// leaves by last access.
//
// SGLang keeps the cache in the free part of its KV pool; the simulator
// gives it a capacity of its own, so that a benchmark can make the cache too
// small to hold every conversation without also starving the running batch.
// Guarded by engine.mu.
type prefixCache struct {
	capacity int // tokens
	size     int // tokens held
	root     cacheNode
	clock    uint64 // advances on every use; a node's lastUse is a tick of it
}

type cacheNode struct {
	ids      []int // the edge from the parent
	parent   *cacheNode
	children map[int]*cacheNode // by their first id
	lastUse  uint64
}

func newPrefixCache(capacity int) *prefixCache {
	return &prefixCache{capacity: capacity}
}

// match returns how many leading ids of seq the cache holds, and marks the
// nodes on the way as just used.
func (c *prefixCache) match(seq []int) int {
	c.clock++
	n, i := &c.root, 0
	for i < len(seq) {
		child := n.children[seq[i]]
		if child == nil {
			break
		}
		child.lastUse = c.clock
		common := commonPrefix(child.ids, seq[i:])
		i += common
		if common < len(child.ids) {
			break
		}
		n = child
	}
	return i
}

// insert adds seq to the cache, then evicts down to the capacity.
func (c *prefixCache) insert(seq []int) {
	c.clock++
	n, i := &c.root, 0
	for i < len(seq) {
		child := n.children[seq[i]]
		if child == nil {
			leaf := &cacheNode{ids: slices.Clone(seq[i:]), parent: n, lastUse: c.clock}
			if n.children == nil {
				n.children = make(map[int]*cacheNode)
			}
			n.children[seq[i]] = leaf
			c.size += len(leaf.ids)
			break
		}
		child.lastUse = c.clock
		common := commonPrefix(child.ids, seq[i:])
		if common < len(child.ids) {
			child = c.split(child, common)
		}
		i += common
		n = child
	}
	c.evict()
}

// split cuts node's edge after k ids and returns the new upper node.
func (c *prefixCache) split(node *cacheNode, k int) *cacheNode {
	upper := &cacheNode{ids: node.ids[:k:k], parent: node.parent, lastUse: node.lastUse,
		children: map[int]*cacheNode{node.ids[k]: node}}
	node.parent.children[node.ids[0]] = upper
	node.ids, node.parent = node.ids[k:], upper
	return upper
}

// evict drops the least recently used leaves until the cache fits.
func (c *prefixCache) evict() {
	for c.size > c.capacity {
		leaves := c.leaves()
		slices.SortFunc(leaves, func(a, b *cacheNode) int { return compareUint(a.lastUse, b.lastUse) })
		for _, leaf := range leaves {
			over := c.size - c.capacity
			if over <= 0 {
				return
			}
			if over < len(leaf.ids) { // the tail is enough
				leaf.ids = leaf.ids[:len(leaf.ids)-over]
				c.size -= over
				return
			}
			delete(leaf.parent.children, leaf.ids[0])
			c.size -= len(leaf.ids)
		}
	}
}

func (c *prefixCache) leaves() []*cacheNode {
	var out []*cacheNode
	stack := []*cacheNode{&c.root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if len(n.children) == 0 && n != &c.root {
			out = append(out, n)
		}
		for _, child := range n.children {
			stack = append(stack, child)
		}
	}
	return out
}

func commonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
