enum _PlaceholderCourierTransport {}
