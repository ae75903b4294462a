extension TransferMachine {
    /// The actions of one event, in order.
    ///
    /// Up to four are stored inline, so stepping the machine allocates nothing (an `Array` would allocate for
    /// every event, several times per request); more — the held body parts a resume releases at once — go to an
    /// overflow array.
    public struct Actions: Sequence, Sendable {
        @usableFromInline var first: Action?
        @usableFromInline var second: Action?
        @usableFromInline var third: Action?
        @usableFromInline var fourth: Action?
        @usableFromInline var overflow: [Action] = []
        /// How many actions there are.
        public var count: Int { _count }
        @usableFromInline var _count = 0

        /// No action.
        @inlinable public init() {}

        /// One action.
        @inlinable public init(_ action: Action) {
            first = action
            _count = 1
        }

        /// Two actions, in this order.
        @inlinable public init(_ action: Action, _ next: Action) {
            first = action
            second = next
            _count = 2
        }

        /// Adds `action` after the others.
        @inlinable public mutating func append(_ action: Action) {
            switch count {
            case 0: first = action
            case 1: second = action
            case 2: third = action
            case 3: fourth = action
            default: overflow.append(action)
            }
            _count += 1
        }

        @inlinable public func makeIterator() -> Iterator { Iterator(actions: self) }

        /// Walks the actions in order.
        public struct Iterator: IteratorProtocol {
            @usableFromInline let actions: Actions
            @usableFromInline var index = 0

            @inlinable init(actions: Actions) { self.actions = actions }

            @inlinable public mutating func next() -> Action? {
                guard index < actions.count else { return nil }
                defer { index += 1 }
                switch index {
                case 0: return actions.first
                case 1: return actions.second
                case 2: return actions.third
                case 3: return actions.fourth
                default: return actions.overflow[index - 4]
                }
            }
        }
    }
}
