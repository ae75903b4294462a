enum _PlaceholderCourierMockServer {}
