import Foundation

/// A PKCS #12 archive made with OpenSSL 3.0, valid for a hundred years: a P-256 client certificate
/// (`CN=fixture-client`, extended key usage `clientAuth`), its key, and the CA that signed it
/// (`CN=Courier Fixture Client CA`), encrypted with the passphrase `courier` (OpenSSL's defaults: PBES2, AES-256-CBC,
/// PBKDF2). Made with:
///
/// ```sh
/// openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 36500 \
///     -subj "/CN=Courier Fixture Client CA" -addext "basicConstraints=critical,CA:TRUE" \
///     -addext "keyUsage=critical,keyCertSign"
/// openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout client.key -out client.csr \
///     -subj "/CN=fixture-client"
/// printf "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n" \
///     > ext.cnf
/// openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 36500 -extfile ext.cnf \
///     -out client.pem
/// openssl pkcs12 -export -inkey client.key -in client.pem -certfile ca.pem -passout pass:courier -out client.p12
/// ```
enum PKCS12Fixture {
    static let passphrase = "courier"

    /// The archive.
    static let archive = Data(
        base64Encoded: [
            "MIIGLAIBAzCCBeIGCSqGSIb3DQEHAaCCBdMEggXPMIIFyzCCBIIGCSqGSIb3DQEHBqCCBHMwggRvAgEAMIIEaAYJKoZIhvcNAQcB",
            "MFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjyFeu6YQCAfwICCAAwDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEED4o",
            "blikCfZuhM83Mn6sVBmAggQAmPofivMEuQRDpof2/ONHhR4UjL0m74F0JlAyYtE85Z26tPwHkad6Y4wnxSfhrUfmAWQCBd+qIFrI",
            "JERQ1zpBSScBbEmzJno46GITwwLvQ/9V7fiNPXEMMM8feoYU6BK76MfMPzV48F00kRi92gwAlga8WFU9EfQNV+yQp7nkc8GbXvoC",
            "PHSZRefkVUKuKhTQPi/mWae6lynhXWC8Gsy3Prg/UuBZOJxTW6yUCG7kp8bM3IWcYswF4lLdww/UKiSFsgym0UPnIAVfX0sgudxW",
            "LMu0aavmiGKuqjRl3TCiq5DCdLpzUIsPBd7NKEdS2nXfiWnntLnHGGzhDLxtqj7SeePyhqB+QT1uUGF2674F6M82nUPiWDaoXYFK",
            "DmImmEbczAJeMVXOXQJIHdvX+qp9WTo+MMsBo8AdiDGJ43IlbT/7/3+2v0SA/mVe7Mnx3c855x+ZMr4T4RtUw0adVfnqfikPHYxs",
            "bjG0KYeziLNBOAffGPCvMxLCa+LRtQPfdS+rD09Pta5k09EQmPuk+Pjj0cMkpBIWpZ/ZWIErLyOWcBfXLuhJ5Ch1qQVXdZBspdN/",
            "WU+0k8KRZRdzeF2V+p+z27ZLheulWqElG5HKQkcadnhVqO8Z9fIv4flXLBJv3+9d1ia4ugAUNU47ZLeOcPyrp8lKsC1YsxLdOGif",
            "5vzB1oSIJRrRPFnEohl7xc2y026Xg3tS+Pe9AQMIBheE/L6LRjBEQibiI/EDTnn0ny28CZnh0k7R559WSmOFUqDSNfEDF+bSuxVr",
            "vzJuHjui8AohTX66fBLn0wjfE9/iClz1GV44D2Bfjm1XBLGleVPnojLVX/u2p6W5Cd5OIwsER/zEOxm3gC6sDZGJs4gjPhqbyr/1",
            "7/SuUV7iI8DA3XVH0MN8leDOTruH55IGMv99vThk4lWooWNt+cI/4kS8w0CjHhc82iZDZ/gd9LYyy7wWqyOdhcMoJu18tcfJIoPG",
            "aSE2X+piiifNqpgojadd0UHsce5J2UBV2WRB/p6kAOH3Qok6ZPBHfMoVYCYFqXcxxW/B2eUelHHm+OgrDcdNEGiNiXk613gyI0B9",
            "kjgsSR5zOg5L8KrhGE9It7xrvQbaXOHEsIIf+fTBEeX/8sK7lVbcZ2LUDN+1dQuzw8vzru3dGk74KfCJv8YGJI9toN9YEBjNhX48",
            "VXRaIfxD+148YzLIDRJXifsCS37yolngOYaZJdDNsFg5q2zquZR2ZE0ru/XJwoc4KLenVxdUGwpSrFLkjrbAzHRmRNjklH2eEWfu",
            "ypQa6/fkb1Ya6Sr1upx65cJMOdynuNik8Preh1vd6pPiVTRyj+6PuNQJiLx/c7w/C5yk8O4/j0X+aacHngivQwdlzzCCAUEGCSqG",
            "SIb3DQEHAaCCATIEggEuMIIBKjCCASYGCyqGSIb3DQEMCgECoIHvMIHsMFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAhT",
            "Nw7Lp1TiYgICCAAwDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEENddXOfxOkyIkwjwFHoK2uAEgZCxFZ5lWDhg9HzZGJ2rkk+F",
            "QZ4Wx6D8fW0ILUXRCFTk2V+GMYDdEPIPUyqq4ZX71XsIz2AvW1rnMKu5KEjgMj4KibwlTMKfxewIKp7n7yPR3P5AgKuAR2D6kANS",
            "ftFBR5bP+6UtfCFhG8HDEl+Gv/PSrdTyK8Ux8xQ5KST+EUN3AKNU5FfqdeLGplIbkaZeDFMxJTAjBgkqhkiG9w0BCRUxFgQUF8pE",
            "JvrdZCru2JemGcGIeFT/2wIwQTAxMA0GCWCGSAFlAwQCAQUABCAkbjtZ76LNHIcA2hjse2kZUT6aK7WbzPLO7SVO2Dz7vAQIjMup",
            "4z/rXgUCAggA",
        ].joined()
    )!

    /// The CA's certificate, DER.
    static let authorityDER = Data(
        base64Encoded: [
            "MIIBsDCCAVWgAwIBAgIUcvS9y85owD+mIY3qkfmmQ1c4jBwwCgYIKoZIzj0EAwIwJDEiMCAGA1UEAwwZQ291cmllciBGaXh0dXJl",
            "IENsaWVudCBDQTAgFw0yNjExMjQwOTAzNTVaGA8yMTI2MTAzMTA5MDM1NVowJDEiMCAGA1UEAwwZQ291cmllciBGaXh0dXJlIENs",
            "aWVudCBDQTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABA6GT4Ob5ppmN25CrwAFa0jCTVkr7mhDSEsRTA7/D6PzgxdTGc+YCuUH",
            "pBVqGDyw3zCvl3iP4D4AKgjhH+uDWOijYzBhMB0GA1UdDgQWBBSiCzPgtMBTRIIDYxs1SzFs9RYvkzAfBgNVHSMEGDAWgBSiCzPg",
            "tMBTRIIDYxs1SzFs9RYvkzAPBgNVHRMBAf8EBTADAQH/MA4GA1UdDwEB/wQEAwICBDAKBggqhkjOPQQDAgNJADBGAiEA+FyzjP5+",
            "E1pXb80/ALrlavpqdG9AKSWwWWlODx80CM8CIQCoQcgwOgOECsURVoQyJ0745M2rYLOPLv1JQyR4YSCFhw==",
        ].joined()
    )!

    /// The client certificate, DER.
    static let leafDER = Data(
        base64Encoded: [
            "MIIBtjCCAVygAwIBAgIUbWcaEglwpeRtZxc2rWdf+TyxGt4wCgYIKoZIzj0EAwIwJDEiMCAGA1UEAwwZQ291cmllciBGaXh0dXJl",
            "IENsaWVudCBDQTAgFw0yNjExMjQwOTAzNTZaGA8yMTI2MTAzMTA5MDM1NlowGTEXMBUGA1UEAwwOZml4dHVyZS1jbGllbnQwWTAT",
            "BgcqhkjOPQIBBggqhkjOPQMBBwNCAATcKE6hkVu8b7XepSVaup+N//17MEyIOVGbVfzFKn0EEkrdeMGoQKEs5XTeAQ42yXDHrDlK",
            "OX6G44WRCc37SyLoo3UwczAMBgNVHRMBAf8EAjAAMA4GA1UdDwEB/wQEAwIHgDATBgNVHSUEDDAKBggrBgEFBQcDAjAdBgNVHQ4E",
            "FgQUTTaW7ZTX2HgNeeDEiVcPS7IiGnEwHwYDVR0jBBgwFoAUogsz4LTAU0SCA2MbNUsxbPUWL5MwCgYIKoZIzj0EAwIDSAAwRQIh",
            "AKgyO0IG5AHGG/YhKN3Q4BYm3sdUujYRQpW+sO3whS/GAiBhodIGqE0hZv9wgS9ELN9XEnOdl7guuZRebVVvrHnbpg==",
        ].joined()
    )!
}
