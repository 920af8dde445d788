package dev.gatebench.gateway.zuul;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import javax.servlet.DispatcherType;
import javax.servlet.http.HttpServletRequest;

import com.netflix.zuul.ZuulFilter;
import com.netflix.zuul.context.RequestContext;

import org.springframework.cloud.netflix.zuul.filters.support.FilterConstants;
import org.springframework.http.HttpStatus;

/**
 * Zuul "pre" filter, right after PreDecorationFilter: the request goes on to the backend only
 * when an operation has its method and its regular expression matches the raw request path
 * (as the client sent it: not decoded, matrix parameters kept). Anything else gets 404, and
 * only the client's own request is ever proxied (never an error or forward dispatch).
 *
 * <p>Zuul's own routes (Ant patterns over the raw path) decide which requests reach Zuul at
 * all; they are written as a superset of the operations, so this filter makes the decision.
 */
public class OperationMatchFilter extends ZuulFilter {

    /** After PreDecorationFilter (5), which picks the route and the backend. */
    public static final int ORDER = FilterConstants.PRE_DECORATION_FILTER_ORDER + 1;

    private final List<String> methods = new ArrayList<>();

    private final List<Pattern> patterns = new ArrayList<>();

    public OperationMatchFilter(OperationsProperties properties) {
        for (OperationsProperties.Operation op : properties.getOperations()) {
            if (op.getMethod().isEmpty() || op.getPathRegex().isEmpty()) {
                throw new IllegalArgumentException(
                        "gatebench.operations: operation '" + op.getId()
                                + "' needs both a method and a path-regex");
            }
            methods.add(op.getMethod());
            patterns.add(Pattern.compile(op.getPathRegex()));
        }
    }

    @Override
    public String filterType() {
        return FilterConstants.PRE_TYPE;
    }

    @Override
    public int filterOrder() {
        return ORDER;
    }

    @Override
    public boolean shouldFilter() {
        return RequestContext.getCurrentContext().sendZuulResponse();
    }

    @Override
    public Object run() {
        RequestContext ctx = RequestContext.getCurrentContext();
        HttpServletRequest request = ctx.getRequest();
        if (request.getDispatcherType() != DispatcherType.REQUEST) {
            // Tomcat's error dispatch (after a 404 elsewhere) or Zuul's forward to the error
            // page: the path is the error page's, not the client's, so it is never proxied;
            // the status already set (404, or the error's) stands.
            stop(ctx, 0);
            return null;
        }
        if (matches(request.getMethod(), request.getRequestURI())) {
            return null;
        }
        stop(ctx, HttpStatus.NOT_FOUND.value());
        return null;
    }

    private static void stop(RequestContext ctx, int status) {
        ctx.setRouteHost(null);
        ctx.remove(FilterConstants.SERVICE_ID_KEY);
        ctx.remove(FilterConstants.FORWARD_TO_KEY);
        ctx.setSendZuulResponse(false);
        if (status != 0) {
            ctx.setResponseStatusCode(status);
        }
    }

    boolean matches(String method, String rawPath) {
        for (int i = 0; i < patterns.size(); i++) {
            if (methods.get(i).equals(method) && patterns.get(i).matcher(rawPath).matches()) {
                return true;
            }
        }
        return false;
    }
}
