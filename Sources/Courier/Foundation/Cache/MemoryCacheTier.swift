import Foundation

/// The memory tier of ``URLCache``: entries by key in least-recently-used order, evicted from the old end to keep
/// the total cost within a capacity. Every operation is O(1) but ``removeStored(since:)`` (a scan): the order is a
/// doubly linked list threaded through an array of slots, so neither a lookup nor an eviction scans or sorts.
///
/// A value type, kept in the cache's lock.
struct MemoryCacheTier {
    struct Entry {
        var response: CachedURLResponse
        var cost: Int
        var stored: Date
    }

    private struct Slot {
        var key: String
        var entry: Entry
        var newer: Int?
        var older: Int?
    }

    private var slots: [Slot?] = []
    private var freeSlots: [Int] = []
    private var index: [String: Int] = [:]
    private var newest: Int?
    private var oldest: Int?
    private(set) var usage = 0
    var capacity: Int {
        didSet { evictToCapacity() }
    }

    init(capacity: Int) {
        self.capacity = capacity
    }

    var count: Int { index.count }

    /// The entry for `key`, which becomes the most recently used.
    mutating func entry(for key: String) -> Entry? {
        guard let slot = index[key] else { return nil }
        moveToNewest(slot)
        return slots[slot]?.entry
    }

    /// Stores `entry` for `key` (replacing one), unless it alone exceeds the capacity; evicts the least recently
    /// used entries to make room.
    mutating func store(_ entry: Entry, for key: String) {
        remove(key)
        guard entry.cost <= capacity else { return }
        let slot: Int
        let new = Slot(key: key, entry: entry, newer: nil, older: newest)
        if let free = freeSlots.popLast() {
            slot = free
            slots[free] = new
        } else {
            slot = slots.count
            slots.append(new)
        }
        if let newest { slots[newest]?.newer = slot }
        newest = slot
        if oldest == nil { oldest = slot }
        index[key] = slot
        usage += entry.cost
        evictToCapacity()
    }

    mutating func remove(_ key: String) {
        guard let slot = index.removeValue(forKey: key), let removed = slots[slot] else { return }
        unlink(slot)
        slots[slot] = nil
        freeSlots.append(slot)
        usage -= removed.entry.cost
    }

    mutating func removeAll() {
        slots.removeAll()
        freeSlots.removeAll()
        index.removeAll()
        newest = nil
        oldest = nil
        usage = 0
    }

    mutating func removeStored(since date: Date) {
        let keys = index.compactMap { key, slot in (slots[slot]?.entry.stored ?? .distantPast) >= date ? key : nil }
        for key in keys { remove(key) }
    }

    /// The keys from the most to the least recently used (for tests).
    var keysByRecency: [String] {
        var keys: [String] = []
        var cursor = newest
        while let slot = cursor, let current = slots[slot] {
            keys.append(current.key)
            cursor = current.older
        }
        return keys
    }

    private mutating func evictToCapacity() {
        while usage > capacity, let victim = oldest, let key = slots[victim]?.key {
            remove(key)
        }
    }

    private mutating func moveToNewest(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        slots[slot]?.older = newest
        slots[slot]?.newer = nil
        if let newest { slots[newest]?.newer = slot }
        newest = slot
        if oldest == nil { oldest = slot }
    }

    private mutating func unlink(_ slot: Int) {
        let newer = slots[slot]?.newer
        let older = slots[slot]?.older
        if let newer { slots[newer]?.older = older } else { newest = older }
        if let older { slots[older]?.newer = newer } else { oldest = newer }
        slots[slot]?.newer = nil
        slots[slot]?.older = nil
    }
}
