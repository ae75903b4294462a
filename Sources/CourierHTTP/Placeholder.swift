enum _PlaceholderCourierHTTP {}
