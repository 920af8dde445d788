# Varnish 7.1 VCL rendered by gatebench: 26 route(s), pass-through.
# Generated file; re-render instead of editing.
vcl 4.1;

backend default {
    .host = "127.0.0.1";
    .port = "9000";
    .connect_timeout = 10s;
    .first_byte_timeout = 300s;
    .between_bytes_timeout = 300s;
}

# Method and raw URL -> pass to the backend; first match wins. The routes are checked in
# subroutines of 50, so the C compiler's time grows linearly with the routes.
sub gatebench_routes_0 {
    if (req.method == "GET" && req.url ~ "^/adv/(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/back\x255[Cc]slash(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/fragment(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "PATCH" && req.url ~ "^/adv/html\x253[Cc]tag\x253[Ee]\x26amp\x3d1\x2c2\x21\x40\x3acolon\x7etilde(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/pct\x2520enc\x252[Ff]slash\x2541(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/adv/query(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/regex\x2e\x2a\x2b\x28meta\x29\x255[Bb]x\x255[Dd]\x255[Ee]\x257[Cc](?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "PUT" && req.url ~ "^/adv/semi\x3bcolon\x24dollar(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/adv/semi\x3bcolon\x24dollar(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/single\x27quote(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/tick\x2560back\x2560(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/long/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/users/me(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/caf\x25[Cc]3\x25[Aa]9/\x25[Ee]6\x2597\x25[Aa]5\x25[Ee]6\x259[Cc]\x25[Aa][Cc]/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/long/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/has\x2520space/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/q\x2522uote/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/shared/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "DELETE" && req.url ~ "^/adv/shared/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/users/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "DELETE" && req.url ~ "^/adv/users/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/adv/users/(?:[^/?]+)/posts(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/vars/(?:[^/?]+)/x(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "PUT" && req.url ~ "^/adv/vars/(?:[^/?]+)/y(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/users/(?:[^/?]+)/posts/(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/adv/twice/(?:[^/?]+)/x/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
}

sub vcl_recv {
    call gatebench_routes_0;
    return (synth(404, "Not Found"));
}
