import CourierHTTP
import Testing

@Suite("Hex")
struct HexTests {
    @Test func bytesBecomeTwoLowercaseDigitsEach() {
        #expect(Hex.lowercase([UInt8]()) == "")
        #expect(Hex.lowercase([0x00, 0x0F, 0xA5, 0xFF] as [UInt8]) == "000fa5ff")
        #expect(Hex.lowercase(Array(UInt8.min...UInt8.max)).count == 512)
    }

    /// The digests Digest authentication sends are the well-known test vectors.
    @Test func digestsAreTheKnownVectors() {
        #expect(DigestAuthentication.Algorithm.md5.hash([]) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(
            DigestAuthentication.Algorithm.sha256.hash(Array("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}
