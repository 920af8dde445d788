# Varnish 7.1 VCL rendered by gatebench: 3 route(s), pass-through.
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
    if (req.method == "POST" && req.url ~ "^/auctions(?:\x3f|$)") {
        if (!(req.http.X-Api-Key == "golden-key-0123456789abcdef" || req.http.X-Api-Key == "golden.key_2~ABCDEFGHIJ")) {
            return (synth(401, "Unauthorized"));
        }
        return (pass);
    }
    if (req.method == "GET" && req.url ~ "^/auctions/(?:[^/?]+)(?:\x3f|$)") {
        if (!(req.url ~ "[?&]api_key=(?:golden-key-0123456789abcdef|golden\.key_2~ABCDEFGHIJ)(?:&|$)")) {
            return (synth(401, "Unauthorized"));
        }
        return (pass);
    }
    if (req.method == "POST" && req.url ~ "^/bid/(?:[^/?]+)(?:\x3f|$)") {
        return (pass);
    }
}

sub vcl_recv {
    call gatebench_routes_0;
    return (synth(404, "Not Found"));
}

sub vcl_backend_fetch {
    if (bereq.http.X-Gatebench-Carried-Authorization) {
        set bereq.http.Authorization = bereq.http.X-Gatebench-Carried-Authorization;
        unset bereq.http.X-Gatebench-Carried-Authorization;
    }
    unset bereq.http.X-Gatebench-Cache-Ttl;
}

sub vcl_backend_response {
}
