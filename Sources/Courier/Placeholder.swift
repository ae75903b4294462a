enum _PlaceholderCourier {}
