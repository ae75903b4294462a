import Testing

/// The tests that run the `courier` executable, one at a time. Each starts processes that take the machine's two
/// cores for a moment; dozens at once made every timing test of the suite miss its marks.
@Suite("courier, the command", .serialized)
enum CLISuites {}
