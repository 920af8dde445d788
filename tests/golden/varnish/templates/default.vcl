# Varnish 7.1 VCL rendered by gatebench: 10 route(s), pass-through.
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
    if (req.method == "GET" && req.url ~ "^/files/index\x2ejson(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/items/new(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/a/b/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/files/(?:[^/?]+)\x2ejson(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "DELETE" && req.url ~ "^/files/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "HEAD" && req.url ~ "^/files/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "OPTIONS" && req.url ~ "^/items/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "PATCH" && req.url ~ "^/items/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/a/(?:[^/?]+)/c(?:\x3f|$)") {
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/v(?:[^/?]+)\x2e(?:[^/?]+)/status(?:\x3f|$)") {
        return (pass);
    }
}

sub vcl_recv {
    call gatebench_routes_0;
    return (synth(404, "Not Found"));
}
