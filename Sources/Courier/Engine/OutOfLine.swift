/// A value kept behind one reference: for a large value that a task rarely has, so that the object holding it (the
/// engine, one per task) does not carry its room inline. A value type: setting it replaces the box.
struct OutOfLine<Value: Sendable>: Sendable {
    private final class Box: Sendable {
        let value: Value
        init(_ value: Value) { self.value = value }
    }

    private var box: Box?

    init(_ value: Value? = nil) {
        box = value.map(Box.init)
    }

    var value: Value? {
        get { box?.value }
        set { box = newValue.map(Box.init) }
    }
}
