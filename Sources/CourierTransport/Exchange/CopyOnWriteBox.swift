/// A value kept in a class box that copies share, copied on the first change made through a copy that shares it.
///
/// For values handed around often and changed rarely (a transport request and its connection options): a copy
/// costs one reference instead of every field with its references.
struct CopyOnWriteBox<Value: Sendable>: Sendable {
    private final class Box: @unchecked Sendable {
        // `@unchecked`: changed only through a uniquely referenced box (see `update`), so a shared one is never
        // written.
        var value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box

    init(_ value: Value) {
        box = Box(value)
    }

    var value: Value { box.value }

    /// Changes the value, copying the box first when another copy shares it.
    mutating func update(_ change: (inout Value) -> Void) {
        if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
        change(&box.value)
    }
}
