def test_old():
    print "py2"
