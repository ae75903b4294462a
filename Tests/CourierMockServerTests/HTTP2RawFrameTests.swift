import Testing

@testable import CourierMockServer

@Suite struct HTTP2RawFrameTests {
    @Test func frameHeaderLayout() {
        let frame = HTTP2RawFrame.frame(
            type: HTTP2RawFrame.FrameType.headers,
            flags: HTTP2RawFrame.Flag.endHeaders | HTTP2RawFrame.Flag.endStream,
            streamID: 0x0102_0304,
            payload: [0xAA, 0xBB]
        )
        #expect(frame == [0, 0, 2, 0x1, 0x5, 0x01, 0x02, 0x03, 0x04, 0xAA, 0xBB])
    }

    @Test func declaredLengthCanLie() {
        let frame = HTTP2RawFrame.frame(type: 0xFA, streamID: 1, payload: [1], declaredLength: 0x01_0000)
        #expect(Array(frame.prefix(5)) == [0x01, 0x00, 0x00, 0xFA, 0])
        #expect(frame.count == 10)
    }

    @Test func headerBlockUsesLiteralsWithoutIndexing() {
        #expect(HTTP2RawFrame.headerBlock([(name: "a", value: "bc")]) == [0x00, 1, 0x61, 2, 0x62, 0x63])
    }

    @Test func longStringsUseMultiByteLengths() {
        // 300 = 127 + 173; 173 = 0xAD → continuation byte 0xAD (45 + 128), then 1.
        let value = String(repeating: "x", count: 300)
        let block = HTTP2RawFrame.headerBlock([(name: "n", value: value)])
        #expect(Array(block.prefix(6)) == [0x00, 1, 0x6E, 0x7F, 0xAD, 0x01])
        #expect(block.count == 6 + 300)
    }

    @Test func settingsAndPushPromise() {
        let settings = HTTP2RawFrame.settings([
            (identifier: HTTP2RawFrame.SettingIdentifier.initialWindowSize, value: 1)
        ])
        #expect(settings == [0, 0, 6, 0x4, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1])
        let push = HTTP2RawFrame.pushPromise(streamID: 1, promisedStreamID: 2, fields: [])
        #expect(push == [0, 0, 4, 0x5, 0x4, 0, 0, 0, 1, 0, 0, 0, 2])
    }
}
