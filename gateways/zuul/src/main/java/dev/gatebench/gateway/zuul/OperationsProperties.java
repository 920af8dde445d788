package dev.gatebench.gateway.zuul;

import java.util.ArrayList;
import java.util.List;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code gatebench.operations}: every operation of the API as a method and a Java regular
 * expression over the raw request path, in the renderer's priority order.
 *
 * <p>Zuul 1 routes by path only; {@link OperationMatchFilter} uses this list to forward a
 * request only when some operation has its method and matches its raw path, exactly like the
 * other gateways gatebench renders for.
 */
@ConfigurationProperties("gatebench")
public class OperationsProperties {

    private List<Operation> operations = new ArrayList<>();

    public List<Operation> getOperations() {
        return operations;
    }

    public void setOperations(List<Operation> operations) {
        this.operations = operations;
    }

    public static class Operation {

        private String id = "";

        private String method = "";

        private String pathRegex = "";

        public String getId() {
            return id;
        }

        public void setId(String id) {
            this.id = id;
        }

        public String getMethod() {
            return method;
        }

        public void setMethod(String method) {
            this.method = method;
        }

        public String getPathRegex() {
            return pathRegex;
        }

        public void setPathRegex(String pathRegex) {
            this.pathRegex = pathRegex;
        }
    }
}
