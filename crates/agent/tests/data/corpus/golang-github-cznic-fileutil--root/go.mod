module modernc.org/fileutil
